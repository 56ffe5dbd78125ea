"""One child run of the user's script for `fxlens bisect`, and what it tells: did it fail, how, where.

Each run is a captured `fxlens run` of the script into `<session>/runs/<n>-<label>`, with the
wrapper backend (`fxlens.bisect.backend:wrapper`) injected; the wrapper's `bisect_graph` events
and torch's trace in that run's session are read back here. This module never imports torch.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from fxlens import config
from fxlens.backend import stages
from fxlens.bisect.cache import cache_env  # the runs' private inductor cache
from fxlens.bisect.judgments import closer_than_eager, divergence_line, forward_only, run_verdict
from fxlens.bisect.verdict import SPLIT  # the names of a run's time split
from fxlens.capture.command import run_captured
from fxlens.capture.runner import REFUSED
from fxlens.errors import FxlensError
from fxlens.live.progress import Progress
from fxlens.report.exits import TIMEOUT_EXIT, how_it_ended
from fxlens.trace.session import Session
from fxlens.trace.userframes import parse_traceback

WRAPPER = "fxlens.bisect.backend:wrapper"
OUTPUT_FILE = "output.txt"  # the child's stdout and stderr, interleaved


@dataclass
class Outcome:
    """What one run showed."""

    n: int
    label: str
    session_dir: Path
    exit_code: int
    seconds: float
    # None (passed), "crash", "accuracy", "timeout", "no_raise" (eager raised, the stage returned)
    kind: str | None
    error: str = ""  # one line: the exception, or the largest divergence
    graphs: dict[int, str] = field(default_factory=dict)  # ordinal -> compile id
    failing: list[int] = field(default_factory=list)  # ordinals the wrapper saw fail, in order
    # the first of `failing` is the wrapper's own record of that graph failing (its compile, a
    # call or a check), not a guess from how the process ended (the graph in flight at a signal)
    recorded: bool = False
    divergence: dict | None = None  # the first failing check's worst divergence
    asked: list[str] = field(default_factory=list)  # backends the script's torch.compile calls asked for
    compiled: bool = False  # whether any graph was compiled at all
    graph_asked: dict[int, str] = field(default_factory=dict)  # ordinal -> backend its call asked for
    # the exception came from the script's own code (its assert_close), not from a compiled graph
    outside: bool = False
    # ordinal -> the exception eager raised on that graph's checked call
    eager_raised: dict[int, str] = field(default_factory=dict)
    # ordinals whose compiled call raised exactly what eager raises (right, not failing)
    as_eager: list[int] = field(default_factory=list)
    # the first failing call compared with eager: "eager raises X, <stage> returns a value", ...
    mismatch: str = ""
    # a checked output that differs from eager's but passes the fp64 rule (see judgments.closer_than_eager)
    closer: dict | None = None
    # where the run's time went: the backends' compiles, the checks against eager and fp64
    compile_s: float = 0.0
    check_s: float = 0.0
    # when the parent started the run (time.time()), how long it waited for the warm process's
    # imports (its first forked run), and the child's own start as its first graph event says it
    launched_at: float = 0.0
    waited_s: float = 0.0
    process: dict | None = None

    def split(self) -> dict[str, float | None]:
        """Where the run's wall time went: startup (a new interpreter and fxlens's runner, or a
        fork), import (torch, with the script's own imports before it; a forked run's is 0, but
        its first waits for the warm process's), compile (the backends'), checks (against eager
        and fp64), run (the rest: the script itself, Dynamo's tracing, exit). startup and import
        are None when no graph was compiled (the child said nothing of its start)."""
        startup = imports = None
        p = self.process or {}
        if self.launched_at and p.get("runner_at") and p.get("torch_at"):
            startup = max(p["runner_at"] - self.launched_at - self.waited_s, 0.0)
            imports = max(p["torch_at"] - p["runner_at"], 0.0) + self.waited_s
        known = sum(x or 0.0 for x in (startup, imports)) + self.compile_s + self.check_s
        return {
            "startup_s": startup,
            "import_s": imports,
            "compile_s": self.compile_s,
            "check_s": self.check_s,
            "run_s": max(self.seconds - known, 0.0),
        }

    def time_line(self) -> str:
        """`25.8s: start 0.1, import 9.4, compile 10.1, checks 0.3, run 5.9` for the progress line."""
        split = self.split()
        parts = [f"{name} {split[k]:.1f}" for k, name in SPLIT if split[k] is not None]
        return f"{self.seconds:.1f}s: " + ", ".join(parts)

    def times(self) -> dict:
        """The run's time, split, for the verdict's `run_times` (`script_and_start_s`: everything
        but compile and checks, as older verdicts had it)."""
        rest = max(self.seconds - self.compile_s - self.check_s, 0.0)
        split = {k: None if v is None else round(v, 2) for k, v in self.split().items()}
        return {
            "n": self.n,
            "label": self.label,
            "seconds": round(self.seconds, 2),
            **split,
            "script_and_start_s": round(rest, 2),
            "forked": bool((self.process or {}).get("forked")),
        }

    @property
    def failed(self) -> bool:
        return self.kind is not None

    def session(self) -> Session:
        return Session.open(self.session_dir)

    def without(self, references: list[str]) -> Outcome:
        """This run as if the calls asking for `references` had not gone through the wrapper.

        Run 1 of a comparing script compiles every call with its own backend; later runs leave
        the reference calls alone, so their graphs take no ordinal: renumber to match.
        """
        keep = [o for o in sorted(self.graphs) if self.graph_asked.get(o) not in references]
        new = {old: i for i, old in enumerate(keep)}
        return replace(
            self,
            graphs={new[o]: self.graphs[o] for o in keep},
            failing=[new[o] for o in self.failing if o in new],
            graph_asked={new[o]: self.graph_asked.get(o, "") for o in keep},
        )


def _last_error_line(text: str) -> str:
    """The exception line of a Python traceback on stderr (the last `Name: message` line)."""
    lines = [ln.rstrip() for ln in (text or "").splitlines() if ln.strip()]
    for ln in reversed(lines):
        head = ln.split(":", 1)[0].strip()
        if ln[:1] not in (" ", "\t") and head and head.replace(".", "").replace("_", "").isalnum():
            if head[:1].isupper() or "." in head:
                return ln[:500]
    return lines[-1][:500] if lines else ""


class Runs:
    """Starts the child runs of one bisect and counts them."""

    def __init__(
        self,
        script: str,
        script_args: list[str],
        session_dir: Path,
        check: str,
        timeout: float | None = None,
        echo=None,
        first: int = 1,
    ) -> None:
        self.script = script
        self.script_args = list(script_args)
        self.session_dir = Path(session_dir)
        self.check = check
        self.timeout = timeout
        self.echo = echo or (lambda line: None)
        self.tick = Progress("bisect", "run")  # the run in progress, on a terminal (fxlens.live.progress)
        self.outcomes: list[Outcome] = []
        self.extra_env: dict[str, str] = {}  # added to every later run (e.g. FXLENS_CHECK_KERNELS)
        self.first = first  # number of the first run (a driver process continues the parent's count)
        # fork each run from this process (`fxlens.bisect.forked_runs`: it imported torch and compiled
        # nothing) instead of starting a fresh interpreter; no TORCH_TRACE then
        self.fork = False
        self.module: str | None = None  # the module of `-m MODULE` (forked runs: see run_forked)
        # or fork each run from a warm server process (`fxlens.bisect.forked_runs.WarmServer`), with a trace
        self.warm = None
        # seconds the CompilerBisector hand-over may take (`fxlens.bisect.handover`); 0: no bound
        self.handover_budget: float = 0.0

    @property
    def count(self) -> int:
        """Runs started so far by this object."""
        return len(self.outcomes)

    def run(
        self,
        label: str,
        stage: str,
        good: str = "",
        graphs: str = "all",
        env: dict | None = None,
        wrap: bool = True,
    ) -> Outcome:
        """One run: graphs selected by `graphs` compile with `stage`, the others with `good`."""
        n = self.first + self.count
        sdir = self.session_dir / "runs" / f"{n:02d}-{_safe(label)}"
        child_env = {
            config.ENV_BISECT_STAGE: stage,
            config.ENV_BISECT_GOOD: good,
            config.ENV_BISECT_GRAPHS: graphs,
            config.ENV_BISECT_CHECK: self.check,
            **cache_env(self.session_dir),
            **self.extra_env,
            **(env or {}),
        }
        t0, launched = time.perf_counter(), time.time()
        sdir.mkdir(parents=True, exist_ok=True)
        res = self._start(sdir, child_env, wrap)
        out = read_outcome(n, label, sdir, res.exit_code, time.perf_counter() - t0, self.timeout)
        out.launched_at = launched
        out.waited_s = getattr(res, "waited_s", 0.0)
        self.outcomes.append(out)
        self.echo(f"  run {n:>2} {label:<44} {run_verdict(out)}  [{out.time_line()}]")
        self.tick.step(label)
        return out

    def _start(self, sdir: Path, child_env: dict, wrap: bool):
        """Run the script once: forked from this driver, from the warm server, or a new interpreter."""
        if self.fork or (self.warm is not None and not self.warm.differs(child_env)):
            child_env[config.ENV_BACKEND_OVERRIDE] = WRAPPER if wrap else None
            kw = dict(
                session_dir=sdir,
                env=child_env,
                timeout=self.timeout,
                output=sdir / OUTPUT_FILE,
                module=self.module,
            )
            if self.fork:
                from fxlens.bisect.forked_runs import run_forked

                return run_forked(self.script, self.script_args, **kw)
            res = self.warm.run(self.script, self.script_args, **kw)
            if res is not None:
                res.waited_s = self.warm.waited_s
                return res
            # the server is gone (it failed to start, or was killed): this run again, and every
            # later one, in a new interpreter; nothing of the lost attempt stays in the run's folder
            self.warm = None
            self.echo("  (the warm process is gone: runs start in new interpreters from here)")
            shutil.rmtree(sdir, ignore_errors=True)
            sdir.mkdir(parents=True, exist_ok=True)
            child_env.pop(config.ENV_BACKEND_OVERRIDE, None)
        return run_captured(
            self.script,
            self.script_args,
            backend=WRAPPER if wrap else None,
            session_dir=str(sdir),
            env=child_env,
            timeout=self.timeout,
            stdout=sdir / OUTPUT_FILE,
            stderr=sdir / OUTPUT_FILE,
        )


def count_runs(session_dir: Path) -> int:
    """Runs of a bisect, counted from disk, so runs started by the CompilerBisector driver count too."""
    d = Path(session_dir) / "runs"
    return sum(1 for p in d.iterdir() if p.is_dir()) if d.is_dir() else 0


def _safe(label: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in label)[:60]


def read_outcome(
    n: int, label: str, sdir: Path, exit_code: int, seconds: float, timeout: float | None = None
) -> Outcome:
    """Read a finished run's session: the wrapper's events, the exit status, the stderr tail.

    `seconds` is the run's wall time as bisect saw it (a first forked run includes the warm
    process's start); a timeout is reported as the limit the script itself had."""
    session = Session.open(sdir)
    out = Outcome(n, label, sdir, exit_code, seconds, None)
    in_flight, no_raise = _read_events(out, session.events, exit_code)
    _classify(out, timeout, in_flight, no_raise)
    return out


def _read_events(out: Outcome, events, exit_code: int) -> tuple[dict | None, bool]:
    """Fill `out` from the run's events; (the last graph event when it says eager raised, so that
    call never finished, or None; whether a stage returned a value where eager raised)."""
    in_flight = None
    no_raise = False
    # (ordinal, call) pairs whose outputs the script's own backward reached (the wrapper's records)
    backward = {
        (ev.get("ordinal"), ev.get("call"))
        for ev in events
        if ev.get("event") == "bisect_graph" and ev.get("phase") == "backward"
    }
    for ev in events:
        kind = ev.get("event")
        if kind == "fxlens_error" and exit_code == REFUSED:
            raise FxlensError(str(ev.get("message")))
        if kind == "compile_call":
            if ev.get("backend") not in (None, "", WRAPPER) and ev["backend"] not in out.asked:
                out.asked.append(ev["backend"])
        elif kind == "bisect_graph":
            if ev.get("refused"):
                raise FxlensError(str(ev.get("error")))
            if ev.get("phase") == "backward":
                continue
            in_flight = ev if ev.get("phase") == "eager" else None
            no_raise = _add_graph_event(out, forward_only(ev, backward), no_raise)
    return in_flight, no_raise


def _add_graph_event(out: Outcome, ev: dict, no_raise: bool) -> bool:
    """Fold one `bisect_graph` event (the wrapper's record of one graph) into `out`; returns the
    no_raise flag, set from the first failing graph's error."""
    out.compiled = True
    ordinal = int(ev.get("ordinal", -1))
    out.graphs.setdefault(ordinal, str(ev.get("compile_id", "?")))
    out.graph_asked.setdefault(ordinal, str(ev.get("asked") or ""))
    if out.process is None and isinstance(ev.get("process"), dict):
        out.process = ev["process"]
    if ev.get("phase") == "compile":
        out.compile_s += float(ev.get("seconds") or 0)
    elif ev.get("phase") == "check":
        out.check_s += float(ev.get("seconds") or 0)
    if ev.get("phase") == "eager":
        out.eager_raised.setdefault(ordinal, str(ev.get("raised", "")))
    elif ev.get("as_eager") and ordinal not in out.as_eager:
        out.as_eager.append(ordinal)
    if ev.get("phase") == "check" and out.closer is None and ev.get("under_test", True):
        out.closer = closer_than_eager(ev)
    if ev.get("ok") is False and ordinal not in out.failing:
        out.recorded = out.recorded or not out.failing
        out.failing.append(ordinal)
        if ev.get("phase") == "check" and out.divergence is None:
            divs = ev.get("divergences") or [{}]
            out.divergence = max(divs, key=lambda d: d.get("max_abs_err") or 0)
            out.divergence["compile_id"] = ev.get("compile_id")
        elif not out.error:
            out.error = str(ev.get("error", ""))
            out.mismatch = str(ev.get("mismatch") or "")
            no_raise = bool(ev.get("no_raise"))
    return no_raise


def _classify(out: Outcome, timeout: float | None, in_flight: dict | None, no_raise: bool) -> None:
    """Set `out.kind` (and the error line) from the exit status and what the events recorded."""
    exit_code = out.exit_code
    if exit_code == TIMEOUT_EXIT:
        out.kind, out.error = "timeout", f"no exit within {timeout or round(out.seconds):g} s"
    elif exit_code < 0:  # a segfault or abort: no Python exception line to quote
        _killed(out, exit_code, in_flight)
    elif no_raise:
        # eager raised on a call, the stage returned a value: wrong whatever the script did next
        out.kind = "no_raise"
    elif exit_code != 0 and out.divergence is not None and not out.error:
        # no graph raised, one diverged, and the script then failed (a comparing script's own
        # assert_close): the divergence is the cause, the exit its consequence
        out.kind = "accuracy"
        out.error = f"{divergence_line(out.divergence)}; the script then exited {exit_code}"
    elif exit_code != 0:
        _script_failed(out)
    elif out.error:
        # a backend error the script survived (torch._dynamo.config.suppress_errors falls back to
        # eager), or an exception other than eager's that the script caught: still the compiler
        # failing. One that is exactly eager's was recorded as ok and is not here.
        out.kind = "crash"
    elif out.divergence is not None:
        out.kind = "accuracy"
        out.error = divergence_line(out.divergence)


def _killed(out: Outcome, exit_code: int, in_flight: dict | None) -> None:
    """A run killed by a signal: a crash, blamed on the graph in flight when eager raises there."""
    out.kind = "crash"
    ended = how_it_ended(exit_code).removeprefix("was ")
    if in_flight is not None:  # killed inside a compiled call on which eager raises
        ordinal = int(in_flight.get("ordinal", -1))
        out.mismatch = f"eager raises {in_flight.get('raised')}, {in_flight.get('stage')} {ended}"
        out.error = out.error or out.mismatch
        if ordinal not in out.failing:
            out.failing.append(ordinal)
    out.error = out.error or ended


def _script_failed(out: Outcome) -> None:
    """A non-zero exit: a crash, or an accuracy failure when the script's own assert_close raised."""
    out.kind = "crash"
    if not out.error:  # no graph raised: the script's output says what did
        output = _stderr(out.session_dir)
        out.outside = _raised_outside_compiled_code(output)
        out.error = _last_error_line(output) or f"exit status {out.exit_code}"
        if out.outside and ASSERT_CLOSE.match(out.error):
            # the script's own assert_close on the outputs: an accuracy failure, not a crash
            out.kind = "accuracy"


# where a traceback passes through compiled code: Dynamo, AOTAutograd (a compiled backward runs
# under the autograd engine, past the wrapper that records graph errors), inductor, FX graph code
COMPILED_CODE_MARKERS = (
    "/torch/_dynamo/",
    "/torch/_functorch/",
    "/torch/_inductor/",
    "/torch/autograd/",
    "/torch/fx/",
    "<eval_with_key>",
    "torchinductor_",
    "/triton/",
    os.path.dirname(os.path.abspath(stages.__file__)) + os.sep,  # fxlens's backend, where installed
)


def _raised_outside_compiled_code(output: str) -> bool:
    """Whether the script's last traceback never passes through compiled code (the script's own
    check raised, e.g. assert_close on the compiled output). No traceback: not known, False."""
    start = output.rfind("Traceback (most recent call last):")
    frames = parse_traceback(output[start:]) if start >= 0 else []
    return bool(frames) and not any(m in f.file for f in frames for m in COMPILED_CODE_MARKERS)


# torch.testing.assert_close's failure lines (the script compared compiled and eager outputs)
ASSERT_CLOSE = re.compile(r"AssertionError: (Tensor-likes|Scalars) are not (close|equal)")


def _stderr(sdir: Path) -> str:
    p = sdir / OUTPUT_FILE
    return p.read_text(errors="replace") if p.exists() else ""
