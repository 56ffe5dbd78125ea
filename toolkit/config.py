"""Every environment switch the toolkit reads, declared once and typed (tinygrad's helpers.py).

The backend has its own switches in `fxlens.backend.config` (it never imports the toolkit).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


def _env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


@dataclass(frozen=True)
class ToolkitConfig:
    """Toolkit switches, read from the environment when `load()` is called."""

    #: where `fxlens run` writes sessions when --session is not given
    sessions_dir: Path
    #: backend name that overrides every torch.compile call in a script run by fxlens (set by the CLI
    #: for the child process it starts)
    backend_override: str
    #: the session directory of the current child run (set by the CLI for the child process)
    session_dir: str
    #: `fxlens doctor`'s child-side timing probe: "eager" (every torch.compile forced eager) or
    #: "compiled"; empty: off (set by `fxlens doctor` for the child processes it starts)
    doctor_probe: str
    #: "module:function" the runner child calls with (script, session_dir) before the script starts
    #: (set by a parent command for its children, e.g. doctor's probe); empty: none
    runner_hook: str = ""
    #: `fxlens doctor --budget`: seconds of interleaved eager-vs-compiled timing per compiled object,
    #: after the script ends, in the compiled child; 0: none (per-call times of the script's own calls)
    doctor_budget_s: float = 0.0
    #: the least wall time doctor's interleaved timing spans before it stops on a narrow interval
    #: (FXLENS_DOCTOR_MIN_SPAN; unset: fxlens.probe.interleave.MIN_SPAN_S, at most half the budget)
    doctor_min_span_s: float | None = None


def load() -> ToolkitConfig:
    return ToolkitConfig(
        sessions_dir=Path(_env_str("FXLENS_SESSIONS_DIR", ".fxlens/sessions")),
        backend_override=_env_str("FXLENS_BACKEND_OVERRIDE"),
        session_dir=_env_str("FXLENS_SESSION"),
        doctor_probe=_env_str("FXLENS_DOCTOR_PROBE"),
        runner_hook=_env_str("FXLENS_RUNNER_HOOK"),
        doctor_budget_s=float(_env_str(ENV_DOCTOR_BUDGET, "0") or 0),
        doctor_min_span_s=_env_float(ENV_DOCTOR_MIN_SPAN),
    )


def _env_float(name: str) -> float | None:
    """A number from the environment; None when unset, empty or not a number."""
    try:
        return float(_env_str(name))
    except ValueError:
        return None


ENV_BACKEND_OVERRIDE = "FXLENS_BACKEND_OVERRIDE"
ENV_SESSION = "FXLENS_SESSION"
ENV_SESSIONS_DIR = "FXLENS_SESSIONS_DIR"
ENV_DOCTOR_PROBE = "FXLENS_DOCTOR_PROBE"
ENV_RUNNER_HOOK = "FXLENS_RUNNER_HOOK"
ENV_DOCTOR_BUDGET = "FXLENS_DOCTOR_BUDGET"  # `fxlens doctor --budget`, for its child processes
# the least seconds doctor's interleaved timing spans before a narrow interval stops it (unset: 10, at
# most half the budget)
ENV_DOCTOR_MIN_SPAN = "FXLENS_DOCTOR_MIN_SPAN"
# -- fxlens fix: set by the parent for each re-run, read by fxlens.fix.child --
ENV_FIX_ACTIONS = "FXLENS_FIX"  # JSON list of the fixes to apply (fxlens.report.fixes actions)
ENV_FIX_OUTPUTS = "FXLENS_FIX_OUTPUTS"  # where the re-run saves its compiled calls' outputs
ENV_FIX_STANCE = "FXLENS_FIX_STANCE"  # set to eager for a reference run (every compiled object run eagerly)
# comma-separated backend specs whose torch.compile calls the override leaves alone: a script that
# compares a backend with a reference (`eager`, `aot_eager`) keeps its reference calls as they are
ENV_OVERRIDE_KEEP = "FXLENS_OVERRIDE_KEEP"
# backends a comparing script's reference calls use (never the backend under test of such a script)
REFERENCE_BACKENDS = ("eager", "aot_eager")


# -- fxlens minify: the parent sets these for its capture child (fxlens.minify.capture) --
ENV_MINIFY_CAPTURE_DIR = "FXLENS_MINIFY_CAPTURE_DIR"  # where the child saves graphs and status
ENV_MINIFY_BACKEND = "FXLENS_MINIFY_BACKEND"  # the real backend spec; empty: the script's own
ENV_MINIFY_CHECK = "FXLENS_MINIFY_CHECK"  # crash, accuracy or auto
ENV_REPRO_DIR = "FXLENS_REPRO_DIR"
# -- fxlens minify --kernel: the parent sets these for its child (fxlens.minify.kernel_capture) --
ENV_KERNEL_NAME = "FXLENS_KERNEL_NAME"  # the kernel to catch; empty: the first failing one
ENV_KERNEL_OUT = "FXLENS_KERNEL_OUT"  # folder for kernel.py, kernel.pt, kernel.json
ENV_KERNEL_BACKEND = "FXLENS_KERNEL_BACKEND"  # the backend's name, for the reproducer's header
ENV_KERNEL_COMMAND = "FXLENS_KERNEL_COMMAND"  # the command that made it, for the header
ENV_KERNEL_CRASH = "FXLENS_KERNEL_CRASH"  # NAME:N: write launch N of NAME before it runs (it ends the process)


@dataclass(frozen=True)
class MinifyConfig:
    """User switches of `fxlens minify`."""

    #: where reproducers go when --out is not given
    repro_dir: Path
    #: worker processes evaluating candidates (0: one per core)
    workers: int
    #: seconds one candidate may take before it counts as a hang
    timeout: float
    #: fresh-interpreter runs of the final reproducer before it is written
    reruns: int
    #: every re-run a new `python FILE` (else all but one fork from a process that imported torch)
    fresh_reruns: bool = False


def load_minify() -> MinifyConfig:
    return MinifyConfig(
        repro_dir=Path(_env_str(ENV_REPRO_DIR, "repro_cases")),
        workers=int(_env_str("FXLENS_MINIFY_WORKERS", "0") or 0),
        timeout=float(_env_str("FXLENS_MINIFY_TIMEOUT", "120") or 120),
        reruns=int(_env_str("FXLENS_MINIFY_RERUNS", "3") or 3),
        fresh_reruns=_env_str("FXLENS_MINIFY_FRESH_RERUNS", "0") not in ("", "0"),
    )


# -- fxlens bisect: set by the bisecting parent for each child run, read by fxlens.bisect.backend --
ENV_BISECT_STAGE = "FXLENS_BISECT_STAGE"
ENV_BISECT_GOOD = "FXLENS_BISECT_GOOD"
ENV_BISECT_GRAPHS = "FXLENS_BISECT_GRAPHS"
ENV_BISECT_CHECK = "FXLENS_BISECT_CHECK"
ENV_BISECT_CHECK_CALLS = "FXLENS_BISECT_CHECK_CALLS"
ENV_BISECT_TIMEOUT = "FXLENS_BISECT_TIMEOUT"
# "1": compare only the graphs under test with fp64 (the CompilerBisector handover's runs, whose
# other graphs run a stage already known good)
ENV_BISECT_CHECK_TESTED_ONLY = "FXLENS_BISECT_CHECK_TESTED_ONLY"
# "1": the CompilerBisector handover runs each step in a new interpreter, not forked from a warm one
ENV_BISECT_FRESH_RUNS = "FXLENS_BISECT_FRESH_RUNS"
# the CompilerBisector state dir of a handover's steps (its run state, ranges and counts): every step
# compiles into a clean inductor cache of its own, so the state cannot live in the cache dir
ENV_BISECT_STATE_DIR = "FXLENS_BISECT_STATE_DIR"
# seconds one run of the watched script may take under bisect, minify and doctor (`--timeout`)
RUN_TIMEOUT_DEFAULT_S = 600.0


def run_timeout(option: float | None, env_value: float = 0.0) -> float | None:
    """The run timeout in seconds from `--timeout` (else an env setting, else the default); None: no limit."""
    value = option if option is not None else (env_value or RUN_TIMEOUT_DEFAULT_S)
    return value if value > 0 else None


@dataclass(frozen=True)
class BisectConfig:
    """Switches of `fxlens bisect`'s wrapper backend (one child run of the user's script)."""

    #: backend spec for the graphs under test (`@asked`: the one the script's torch.compile asked for)
    stage: str
    #: backend spec for every other graph (the stage before, known good); empty: same as `stage`
    good: str
    #: which graphs (0-based order of compilation) get `stage`: "all", "3" or "2-5"
    graphs: str
    #: what the wrapper records: "crash" (errors only), "accuracy" or "auto" (errors and accuracy)
    check: str
    #: how many calls of each compiled graph are compared against the fp64 reference
    check_calls: int
    #: seconds one child run may take before it counts as a hang (0: no limit)
    timeout: float
    #: compare only the graphs compiled with `stage` (the others still record crashes)
    check_tested_only: bool = False
    #: the CompilerBisector handover starts each step in a new interpreter (default: forked)
    fresh_runs: bool = False


def load_bisect() -> BisectConfig:
    return BisectConfig(
        stage=_env_str(ENV_BISECT_STAGE, "@asked"),
        good=_env_str(ENV_BISECT_GOOD),
        graphs=_env_str(ENV_BISECT_GRAPHS, "all"),
        check=_env_str(ENV_BISECT_CHECK, "auto"),
        check_calls=int(_env_str(ENV_BISECT_CHECK_CALLS, "1") or 1),
        timeout=float(_env_str(ENV_BISECT_TIMEOUT, "0") or 0),
        check_tested_only=_env_str(ENV_BISECT_CHECK_TESTED_ONLY, "0") not in ("", "0"),
        fresh_runs=_env_str(ENV_BISECT_FRESH_RUNS, "0") not in ("", "0"),
    )


# -- reading traces: processes reading a job's per-rank logs at once (fxlens.trace.parallel) --
ENV_READ_JOBS = "FXLENS_READ_JOBS"


def read_jobs() -> int:
    """Processes that read logs in parallel: 0 (default) one per available core but one, for a job
    of 8 MB or more (fxlens.trace.parallel.jobs_for); 1 in this process."""
    try:
        return max(0, int(_env_str(ENV_READ_JOBS, "0") or 0))
    except ValueError:
        return 0


# -- fxlens run's live status line (fxlens.live.terminal) --

# seconds between two reads of a running job's trace by `fxlens run`'s live status line (default 0.5, at
# least 0.05); each read takes only the bytes appended since the last one
ENV_LIVE_INTERVAL = "FXLENS_LIVE_INTERVAL"


def live_interval() -> float:
    """Seconds between two reads of a running job's trace for the live view (default 0.5; at
    least 0.05)."""
    try:
        return max(0.05, float(_env_str(ENV_LIVE_INTERVAL, "0.5") or 0.5))
    except ValueError:
        return 0.5


# -- what a bug report's command line carries besides the command itself --------------------------
# switches that change what the script or its compile does, so a pasted command reproduces the same
# run: fxlens's fault injection and the user's torch switches (prefixes), never the paths and
# bookkeeping fxlens sets for its own children (session dirs, bisect stages, minify capture)
REPRODUCING_ENV = ("FXLENS_INJECT", "FXLENS_OVERRIDE_KEEP")
REPRODUCING_ENV_PREFIXES = ("TORCH_COMPILE_", "TORCHDYNAMO_", "TORCHINDUCTOR_", "TORCH_LOGS", "PYTORCH_")


def reproducing_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The switches of ENV (default: this process's environment) a pasted command needs, sorted."""
    env = os.environ if env is None else env
    return {
        k: v
        for k, v in sorted(env.items())
        if k in REPRODUCING_ENV or (k.startswith(REPRODUCING_ENV_PREFIXES) and k != "TORCHINDUCTOR_CACHE_DIR")
    }


# -- Dynamo's seconds by source line (fxlens.capture.linetime), in the runner child --
# "0" turns the per-instruction timing off (to measure its overhead, or to rule it out); default on
ENV_COMPILE_LINES = "FXLENS_COMPILE_LINES"


def compile_lines_on() -> bool:
    """Whether the runner child times Dynamo's tracing by source line (default on)."""
    return _env_str(ENV_COMPILE_LINES, "1").strip() not in ("0", "off", "no", "false")
