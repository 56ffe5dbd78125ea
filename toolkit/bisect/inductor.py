"""Hand an inductor failure over to torch's own `CompilerBisector` (passes, lowerings, configs).

`python -m fxlens.bisect.inductor SPEC.json` runs in a child process of `fxlens bisect` (it imports
torch; the CLI process does not). It calls `CompilerBisector.do_bisect(fn)`, where `fn` is one
more captured run of the user's script with only the culprit graph compiled by inductor and the
others by the stage before, and with `TORCH_BISECT_*` set the way torch's own
`python -m torch._inductor.compiler_bisector run` sets them for its subprocesses. The bisector's
state lives in a private inductor cache dir (it deletes that dir when it starts and ends). The
result goes to SPEC's `out` file as JSON.

Each step is still a whole run of the script, but forked from this driver (`fxlens.bisect.forked_runs`)
after it imported torch and inductor once, so a step pays for Dynamo, the compile and the script,
not for a new interpreter and its imports. A step only needs pass/fail: it writes no trace and
compares only the culprit graph with fp64. FXLENS_BISECT_FRESH_RUNS=1 runs every step in a new
interpreter instead (the verdict must be the same; tests check that it is).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from fxlens import config
from fxlens.bisect.driver_process import launch, relay, warm_for
from fxlens.bisect.runs import Runs, count_runs
from fxlens.capture import children


def run_driver(spec: dict) -> dict:
    """Run CompilerBisector over `spec`'s script; returns {result, runs}."""
    state, fork, step_env = _prepare(spec)
    ready_at = time.time()  # the driver's own start and imports end here (`hand_over`)
    from fxlens.backend.torch_compat import CompilerBisector

    runs = Runs(
        spec["script"],
        spec["args"],
        Path(spec["session_dir"]),
        spec["check"],
        timeout=spec.get("timeout"),
        echo=lambda line: print(line, flush=True),
        first=spec["first_run"],
    )
    if fork:
        _probe_once()
    runs.fork = fork
    runs.module = spec.get("module")
    runs.extra_env.update(spec.get("env") or {})
    # a step only asks "does the culprit graph still fail": the other graphs run the stage before,
    # already known good, so only the culprit is compared with fp64 (crashes anywhere still count)
    runs.extra_env[config.ENV_BISECT_CHECK_TESTED_ONLY] = "1"
    # forked steps inherit this; fresh ones read it from FXLENS_BISECT_STATE_DIR
    CompilerBisector.in_process_cache = state
    fn = _step(CompilerBisector, runs, spec, step_env)
    RUNS.append(runs)
    try:
        found = CompilerBisector.do_bisect(fn)
        fn.confirm()  # no step passed and none failed the same way: the graph still needs its run
    except Unconfirmed as e:
        return {**_result(None, runs), "unconfirmed": str(e), "ready_at": ready_at}
    except BudgetSpent:
        return {**_result(None, runs), **_spent(), "ready_at": ready_at}
    return {**_result(found, runs), "ready_at": ready_at}


def _probe_once() -> None:
    """Probe the CPU's vector ISA here, once, for every step forked from this driver: each step
    compiles into an empty cache dir (`clean_cache`), where inductor's first C++ compile would
    otherwise rebuild and run the probe (~30 s of a ~50 s passing step, 2-core box at load ~6)."""
    from fxlens.backend.torch_compat import probe_vector_isa

    t0 = time.perf_counter()
    try:
        probe_vector_isa()
    except Exception:  # noqa: BLE001 - each step's own compile then probes, and fails as it would
        return
    print(
        f"  warm: the CPU's vector ISA probed once for every step ({time.perf_counter() - t0:.1f}s)",
        flush=True,
    )


class BudgetSpent(Exception):
    """The next step would not end within the hand-over's time budget."""


# the driver's Runs and each step's {subsystem, state, fails, seconds}, for a partial answer when
# the budget ends the bisector (or the parent ends this driver at its deadline)
RUNS: list = []
STEPS: list[dict] = []


def _spent() -> dict:
    from fxlens.bisect.handover import partial_answer

    return {"budget_spent": partial_answer(STEPS), "steps": list(STEPS)}


def _check_budget(spec: dict) -> None:
    """Raise BudgetSpent when one more step (its estimate: the mean of the steps so far, else the
    parent's estimate from the failing run) would end after the deadline."""
    deadline = spec.get("deadline")
    if not deadline:
        return
    done = [s["seconds"] for s in STEPS]
    estimate = sum(done) / len(done) if done else float(spec.get("estimate") or 0)
    left = deadline - time.time()
    if estimate > left:
        print(
            f"  budget left {max(left, 0):.0f}s, a step ~{estimate:.0f}s: the hand-over stops here",
            flush=True,
        )
        raise BudgetSpent()


def _prepare(spec: dict) -> tuple[str, bool, dict]:
    """Set every switch torch reads at import time, then (forked steps) import torch and inductor
    once; returns (the bisector's state dir, whether steps are forked, the env of every step).

    The bisector's state files live in the state dir (it deletes that dir when it starts and
    ends). The steps forked from here each start from a process that imported torch and inductor
    and never compiled anything; they inherit the state dir as the bisector's and compile into
    the bisect's own inductor cache. A fresh-interpreter step finds the state only through its
    cache dir (torch's `run` mode does the same): there, that dir is the state dir.
    """
    from fxlens.bisect.cache import cache_env

    state = spec["cache_dir"]
    fork = spec.get("fork", True)
    step_env = cache_env(Path(spec["session_dir"]))
    # every step finds the bisector's state here, forked or fresh (`fxlens.bisect.backend`), and
    # compiles into a clean cache of its own (`_step`)
    step_env[config.ENV_BISECT_STATE_DIR] = state
    os.environ.update(step_env)  # before torch reads them
    # fxlens's ladder already showed inductor is the first failing backend: start there
    # (torch computes CompilerBisector.bisection_enabled from it at import time)
    os.environ["TORCH_BISECT_BACKEND"] = "inductor"
    os.environ["TORCH_COMPILE_BACKEND"] = "inductor"
    os.environ.update(spec.get("env") or {})
    os.environ.pop("TORCH_TRACE", None)  # these runs write no trace (see fxlens.bisect.forked_runs)
    if fork:
        import torch  # noqa: F401
        import torch._inductor.compile_fx  # noqa: F401 - inductor's imports, paid once

        import fxlens.bisect.backend  # noqa: F401 - the wrapper every run compiles through
        import fxlens.bisect.fp64_compare  # noqa: F401
        import fxlens.capture.runner  # noqa: F401
        from fxlens.backend.torch_compat import clear_bisector_env_cache
        from fxlens.bisect.backend import under_bisector

        # a driver forked from bisect's warm process imported torch and the wrapper before the
        # switches above: what they read at import is read again
        clear_bisector_env_cache()
        under_bisector()
    return state, fork, step_env


# CompilerBisector subsystems that only act on CUDA graphs
CUDA_ONLY = ("cudagraphs",)
SKIPPED: list[str] = []
# a subsystem name no inductor pass has: a step under it disables nothing and changes no
# bisector state (torch compares the active subsystem's name before it counts or disables)
NO_SUBSYSTEM = "fxlens-none"


class Unconfirmed(Exception):
    """The culprit graph, compiled alone by inductor, did not fail as the first run recorded."""


def _confirmer(runs, spec: dict, step_env: dict):
    """`confirm(out)`: whether the culprit graph is known to fail alone under inductor.

    `fxlens bisect` took the graph from the first run's own record (it failed there, compiled by
    inductor beside the others) and skipped its confirming run (`spec["confirmed"]` False). A
    step that fails the same way confirms it for free; the first step that passes, before that,
    would rest on an unconfirmed graph: then that run is made, with inductor whole (no
    subsystem), and Unconfirmed raised when it passes (flaky, or it needs the other graphs)."""
    state = {"confirmed": spec.get("confirmed", True)}

    def confirm(out=None) -> None:
        if state["confirmed"]:
            return
        if out is not None:  # a step's own run: a failure like the first run's confirms
            state["confirmed"] = same_failure(out, spec)
            return
        env = {**step_env, "TORCH_COMPILE_BACKEND": "inductor", "TORCH_BISECT_BACKEND": "inductor"}
        env["TORCH_BISECT_SUBSYSTEM"] = NO_SUBSYSTEM
        label = f"inductor on graph {spec['graph']} (confirming run 1's record)"
        with clean_cache(step_env) as cache:
            env["TORCHINDUCTOR_CACHE_DIR"] = cache
            again = runs.run(label, stage="inductor", good=spec["good"], graphs=str(spec["graph"]), env=env)
        if not same_failure(again, spec):
            got = f"{again.kind}: {again.error}" if again.kind else "passes"
            raise Unconfirmed(f"graph {spec['graph']} alone: {got}")
        state["confirmed"] = True

    return confirm


def same_failure(out, spec: dict) -> bool:
    """Whether a run failed as the first run did: the same kind and, for a crash, the same
    message once sizes, addresses, paths, kernel and node names are set aside (minify's signature
    rules). An accuracy failure's numbers move with every pass disabled: its kind is the test."""
    if out.kind != spec["kind"]:
        return False
    if out.kind != "crash" or not spec.get("error"):
        return True
    from fxlens.capture.accuracy import normalise_message

    return normalise_message(out.error) == normalise_message(spec["error"])


def _uses_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def _step(bisector, runs, spec: dict, step_env: dict):
    """CompilerBisector's test function: one run of the script in the step the bisector is at."""

    cuda = _uses_cuda()
    confirm = _confirmer(runs, spec, step_env)

    def fn() -> bool:
        backend = bisector.get_backend()
        subsystem = bisector.get_subsystem()
        if backend == "inductor" and not subsystem:
            # the whole-inductor run on this graph is known to fail: fxlens's confirming run,
            # or the first run's own record, confirmed by a later step (`_confirmer`)
            return False
        if subsystem in CUDA_ONLY and not cuda:
            # cannot apply without a CUDA device: disabling it cannot fix the failure, so the
            # answer is "still fails" without a run (torch's own bisector runs the script for it)
            if subsystem not in SKIPPED:
                SKIPPED.append(subsystem)
                print(f"  skip {subsystem}: no CUDA device here, it cannot apply", flush=True)
            return False
        env = {**step_env, "TORCH_COMPILE_BACKEND": backend, "TORCH_BISECT_BACKEND": backend}
        run_state = ""
        if subsystem:
            env["TORCH_BISECT_SUBSYSTEM"] = subsystem
            run_state = bisector.get_run_state(backend, subsystem) or ""
            if run_state == "test_disable":
                env["TORCH_BISECT_MAX"] = "-1"  # disable the subsystem entirely, as torch's CLI does
        _check_budget(spec)
        with clean_cache(step_env) as cache:
            env["TORCHINDUCTOR_CACHE_DIR"] = cache
            out = runs.run(
                f"inductor {subsystem} {run_state}".strip(),
                stage="inductor",
                good=spec["good"],
                graphs=str(spec["graph"]),
                env=env,
            )
        confirm(out)
        same = same_failure(out, spec)
        STEPS.append({"subsystem": subsystem, "state": run_state, "fails": same, "seconds": out.seconds})
        if spec.get("deadline"):
            mean = sum(s["seconds"] for s in STEPS) / len(STEPS)
            left = spec["deadline"] - time.time()
            print(f"  budget {max(left, 0):.0f}s left, ~{mean:.0f}s a step so far", flush=True)
        if out.failed and not same:
            # another failure (a cached kernel that no longer loads, a pass that crashes once
            # another is off) is not the script's: the step says nothing of the failure searched
            # for. torch's own `compiler_bisector run` counts it bad, and its binary search then
            # names a step that only broke differently. Listed in the verdict.
            OTHER.append({"run": out.n, "label": out.label, "error": f"{out.kind}: {out.error}"[:300]})
            print(
                f"  other run {out.n} failed otherwise than the script did: counted as not failing",
                flush=True,
            )
        if not same:
            confirm()  # a pass is a verdict: only on a graph known to fail alone
        return not same

    fn.confirm = confirm
    return fn


# steps that failed, but not as the script did (`_step`): in the verdict's `other_failures`
OTHER: list[dict] = []


@contextlib.contextmanager
def clean_cache(step_env: dict):
    """A new, empty inductor cache dir for one step, inside the bisect's private one, removed after.

    A step never loads what an earlier step compiled: a kernel `.so` cut short (a step killed while
    it was written) fails to load ("file too short") in every later step that compiles the same
    source, a failure that is not the script's. Each step pays its own C++ compiles for it."""
    parent = step_env.get("TORCHINDUCTOR_CACHE_DIR") or tempfile.gettempdir()
    os.makedirs(parent, exist_ok=True)
    path = tempfile.mkdtemp(prefix="step-", dir=parent)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _result(result, runs) -> dict:
    """The driver's JSON: CompilerBisector's verdict (None: it found nothing) and every step run."""
    return {
        "result": None
        if result is None
        else {
            "backend": result.backend,
            "subsystem": result.subsystem,
            "bisect_number": result.bisect_number,
            "debug_info": result.debug_info,
        },
        "skipped": list(SKIPPED),
        "other_failures": list(OTHER),
        "runs": [{**o.times(), "ok": not o.failed, "error": o.error} for o in runs.outcomes],
    }


def _run_spec(runs: Runs) -> dict:
    """What the driver needs of the parent's runs to start its own."""
    return {
        "script": runs.script,
        "args": runs.script_args,
        "session_dir": str(runs.session_dir),
        "check": runs.check,
        "timeout": runs.timeout,
        "first_run": count_runs(runs.session_dir) + 1,
        "env": runs.extra_env,
        "fork": not config.load_bisect().fresh_runs,
        "module": runs.module,
    }


def hand_over(
    runs: Runs, stage: str, good: str, ordinal: int, kind: str, confirmed=True, error="", estimate_from=None
) -> dict:
    """Run torch's CompilerBisector on the culprit graph in a driver process (fxlens.bisect.inductor);
    `confirmed` False: the driver checks the graph fails alone as recorded (`kind`; a crash's `error`).
    It ends by `runs.handover_budget` seconds (the driver stops before a step that would not fit,
    this process ends it at the deadline); `estimate_from`: the run a step's time is guessed from."""
    with tempfile.TemporaryDirectory(prefix="fxlens-bisect-") as tmp:
        # `kind` and `error`: how the recording run failed (`same_failure`)
        spec = {**_run_spec(runs), "kind": kind, "error": error, "good": good, "graph": ordinal}
        spec.update(confirmed=confirmed, cache_dir=str(Path(tmp) / "inductor-cache"))
        spec["out"] = str(Path(tmp) / "result.json")
        spec_path = Path(tmp) / "spec.json"
        warm = warm_for(runs, spec)
        how = (
            "the driver and each step forked from bisect's warm process"
            if warm is not None
            else "each step forked from a warm driver"
            if spec["fork"]
            else "each step a new interpreter"
        )
        runs.echo(f"  handing over to torch's CompilerBisector (inductor passes, configs, lowerings; {how})")
        budget = runs.handover_budget
        t0, launched = time.perf_counter(), time.time()
        _set_budget(runs, spec, launched, estimate_from)
        spec_path.write_text(json.dumps(spec))
        proc = launch(warm, spec_path, runs.echo)
        tail = relay(proc, runs.echo, budget)
        out_path = Path(spec["out"])
        if not out_path.exists():
            last = next((ln for ln in reversed(tail) if ln.strip()), "no output")
            return {"error": f"CompilerBisector driver exited with status {proc.returncode}: {last}"}
        data = json.loads(out_path.read_text())
    extra = {"forked": spec["fork"], "seconds": round(time.perf_counter() - t0, 2), "budget_s": budget}
    if data.get("budget_spent"):
        extra["budget_spent"] = data["budget_spent"]
    # the driver's own interpreter start and imports (forked steps skip them; fresh ones do not)
    extra["driver_start_s"] = round(data["ready_at"] - launched, 2) if data.get("ready_at") else None
    return {
        **(data.get("result") or {"found": None}),
        "runs": len(data.get("runs", [])),
        "skipped": data.get("skipped") or [],
        "other_failures": data.get("other_failures") or [],
        "run_times": data.get("runs") or [],
        **extra,
        **_err(data),
        **({"unconfirmed": data["unconfirmed"]} if data.get("unconfirmed") else {}),
    }


def _set_budget(runs: Runs, spec: dict, launched: float, estimate_from) -> None:
    """The driver's deadline and first step estimate in `spec`, and the `budget` line said."""
    from fxlens.bisect.handover import budget_line, step_estimate

    if not runs.handover_budget:
        return
    spec["deadline"] = launched + runs.handover_budget
    if estimate_from is not None:
        spec["estimate"] = step_estimate(estimate_from)
        source = f"run {estimate_from.n} less its imports"
        runs.echo(budget_line(runs.handover_budget, spec["estimate"], source))


def _err(data: dict) -> dict:
    return {"error": data["error"]} if data.get("error") else {}


def _write_partial(spec: dict) -> None:
    """The steps so far, for the parent's verdict, when this driver is ended before its answer."""
    runs = [{**o.times(), "ok": not o.failed, "error": o.error} for r in RUNS for o in r.outcomes]
    out = {"result": None, "runs": runs, "skipped": list(SKIPPED), "other_failures": list(OTHER), **_spent()}
    Path(spec["out"]).write_text(json.dumps(out, default=str))


def main(argv: list[str] | None = None) -> int:
    # the parent ends this driver's group with SIGTERM; the runs it started are groups of their
    # own, so end them first (else they would outlive both)
    children.install_sigterm()
    children.die_with_parent()  # fxlens killed, even by SIGKILL: so is this driver (its runs: below)
    spec = json.loads(Path((argv or sys.argv[1:])[0]).read_text())
    try:
        out = run_driver(spec)
    except KeyboardInterrupt:  # and SIGTERM: the parent's deadline, or the user
        children.end_all()
        _write_partial(spec)
        return 143
    except Exception as e:  # reported by the parent as "CompilerBisector did not finish"
        out = {"error": f"{type(e).__name__}: {e}", "runs": []}
    Path(spec["out"]).write_text(json.dumps(out, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
