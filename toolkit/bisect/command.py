"""`fxlens bisect SCRIPT [ARGS...]`: which stage, graph, kernel and fusion decision break a model.

Steps, each one counted child run of the script (see `fxlens.bisect.runs`):

1. The backend under test (default: the one the script's torch.compile asks for), all graphs.
   Passing there means nothing fails.
2. The ladder below it (`fxlens.bisect.ladder.ladder`), bottom up, until a stage fails: the first
   failing stage S; the one before, P, is known good. If the bottom (eager) fails, one run with
   Dynamo disabled tells "the script itself fails" from "Dynamo's capture fails".
3. Inside S: which graph, by runs that compile some graphs with S and the rest with P (the failing
   run's own per-graph records give a first guess, so it is often one run; none when the graph
   goes to CompilerBisector, whose steps confirm the failing run's record on the way).
4. Inside that graph: for fxlens's own stages, which kernel (kernels outside a range run as ATen
   through FXLENS_KERNEL_FALLBACK) and, for the fused stage, which fusion decision
   (FXLENS_FUSION_LIMIT); for inductor, torch's CompilerBisector (`fxlens.bisect.inductor`).

The verdict is printed, stored as a `bisect` event in the bisect's own session (child runs under
`<session>/runs/`), and returned by `bisect_script` for `fxlens demo`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
from pathlib import Path

from fxlens import config
from fxlens.bisect.cache import cache_dir, cache_env, claim_cache
from fxlens.bisect.culprit import culprit_of
from fxlens.bisect.forked_runs import WarmServer
from fxlens.bisect.handover import DEFAULT_BUDGET_S, budget_seconds, crash_site, run_output, say_stage_verdict
from fxlens.bisect.inductor import hand_over
from fxlens.bisect.kernels import ENV_CHECK_KERNELS, find_fusion, find_kernel
from fxlens.bisect.ladder import can, ladder, narrow
from fxlens.bisect.runs import Outcome, Runs, count_runs
from fxlens.bisect.script_env import sets_environment
from fxlens.bisect.verdict import next_command, render_text, summary_line
from fxlens.capture.backends import check_spec
from fxlens.capture.command import add_timeout_argument, check_script, module_of
from fxlens.errors import FxlensError
from fxlens.live import progress
from fxlens.report.bisect_result import BisectResult
from fxlens.report.exits import how_it_ended
from fxlens.report.outputs import add_format_arguments, write_formatted, write_json
from fxlens.trace.session import append_event, new_session_dir, write_info
from fxlens.trace.userframes import short_path

CHECKS = ("crash", "accuracy", "auto")
# failure kinds each --check counts (a run that fails some other way is reported, not followed)
# ("no_raise": eager raised on a call and the stage returned a value, a behaviour like a crash)
COUNTS = {
    "crash": ("crash", "timeout", "no_raise"),
    "accuracy": ("accuracy",),
    "auto": ("crash", "timeout", "no_raise", "accuracy"),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--backend",
        metavar="NAME",
        help="backend to bisect (default: the one the script passes to torch.compile)",
    )
    parser.add_argument(
        "--check",
        choices=CHECKS,
        default="auto",
        help="what counts as failing: a crash, outputs/gradients diverging from fp64, or either (default)",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the verdict as JSON to FILE")
    add_timeout_argument(parser)
    add_format_arguments(parser)
    parser.add_argument(
        "--no-compiler-bisector",
        action="store_true",
        help="stop at the inductor graph; don't hand over to torch's CompilerBisector",
    )
    parser.add_argument(
        "--compiler-bisector-budget",
        metavar="SECONDS",
        type=budget_seconds,
        default=DEFAULT_BUDGET_S,
        help=f"time the CompilerBisector hand-over may take (default {DEFAULT_BUDGET_S:.0f}; 0: no bound)",
    )


def main(args: argparse.Namespace) -> int:
    from fxlens.report.outputs import check_writable

    check_script(args.script)
    check_writable(args.json)
    check_writable(args.report, "--report")
    timeout = config.run_timeout(args.timeout, config.load_bisect().timeout)
    result = bisect_script(
        args.script,
        args.script_args,
        backend=args.backend,
        check=args.check,
        timeout=timeout,
        torch_bisector=not args.no_compiler_bisector,
        bisector_budget=args.compiler_bisector_budget,
    )
    progress.clear()
    print()
    print(render_text(result))
    if args.json:
        write_json(result, args.json)
    if args.format != "text":
        from fxlens.report.verdicts import render

        blocks = BisectResult.from_json(result).blocks(args.script)
        write_formatted(render(blocks, args.format, "fxlens bisect"), args.report)
    return 0


def bisect_script(
    script: str,
    args: list[str] | tuple[str, ...] = (),
    backend: str | None = None,
    check: str = "auto",
    *,
    session_dir: str | os.PathLike | None = None,
    timeout: float | None = None,
    torch_bisector: bool = True,
    echo=None,
    env: dict[str, str] | None = None,
    bisector_budget: float = DEFAULT_BUDGET_S,
) -> dict:
    """Bisect SCRIPT's failure; the public entry point (`fxlens demo` calls it).

    Args:
        script: path to the user's script, run as `__main__` in child processes.
        args: the script's own arguments.
        backend: backend spec to bisect; None: the one the script's torch.compile asks for.
        check: "crash", "accuracy" or "auto".
        session_dir: where to store the bisect (default: a new session under FXLENS_SESSIONS_DIR).
        timeout: seconds a run may take before it counts as a hang.
        torch_bisector: hand an inductor failure over to torch's CompilerBisector.
        echo: called with one line per run (progress); `lambda line: None` for silence.
        env: extra environment for every run (e.g. {"FXLENS_INJECT": "accuracy:aten.erf"}).
        bisector_budget: seconds the CompilerBisector hand-over may take (0: no bound).

    Returns:
        The `--json` dict: first_failing_stage, check, runs, culprit {compile_id, function, file,
        line, kernel, ops}, and outcome, stages, kernel, fusion, compiler_bisector, summary, next.
    """
    check_script(script)
    echo = echo or progress.echo  # above the progress line on a terminal
    sdir, info = _open_session(script, args, backend, check, session_dir, env)
    try:
        return _bisect_in(
            sdir, info, script, args, backend, check, timeout, torch_bisector, echo, env, bisector_budget
        )
    except BaseException as e:  # interrupted or failed: said in session.json, never `exit_code: null`
        _mark_ended(sdir, info, e)
        raise


def _mark_ended(sdir: Path, info: dict, e: BaseException) -> None:
    """session.json of a bisect that did not finish: its exit status as the CLI returns it, and
    `interrupted` for Ctrl-C / SIGTERM (so no reader takes it for a bisect still running)."""
    from fxlens.capture import children

    if isinstance(e, KeyboardInterrupt):
        terminated = isinstance(e, children.Terminated)
        info.update(exit_code=143 if terminated else 130, interrupted=True)
    else:
        info.update(exit_code=getattr(e, "exit_code", 70) if isinstance(e, FxlensError) else 70)
    info["finished"] = time.time()
    try:
        write_info(sdir, info)
    except FxlensError:  # a vanished session folder: the interrupt or error is the news
        pass


def _bisect_in(sdir, info, script, args, backend, check, timeout, torch_bisector, echo, env, budget) -> dict:
    t0 = time.perf_counter()
    runs = Runs(script, list(args), sdir, check, timeout=timeout, echo=echo)
    runs.handover_budget = budget
    runs.extra_env.update(env or {})
    runs.module = module_of(script)
    how = _start_warm(runs, script, env or {})
    echo(f"fxlens bisect: {script} (check {check}); runs in {sdir / 'runs'} ({how})")
    try:
        result = _bisect(runs, script, list(args), backend, check, torch_bisector)
    finally:  # compiled C++ the runs shared (see cache.cache_env): not part of the session
        if runs.warm is not None:
            runs.warm.close()
        shutil.rmtree(cache_dir(sdir), ignore_errors=True)
    result.update(check=check, runs=count_runs(sdir), seconds=round(time.perf_counter() - t0, 2))
    # where each run's time went (the CompilerBisector steps' are under compiler_bisector)
    result["run_times"] = [o.times() for o in runs.outcomes]
    result["session"] = str(sdir)
    result["summary"] = summary_line(result)
    result["next"] = next_command(result, script, list(args))
    result["invocation"] = {k: info.get(k) for k in ("script", "module", "argv", "backend", "check", "env")}
    # the one result object: a key the contract does not declare is a TypeError here, not a surprise
    result = BisectResult(**result).to_json()
    append_event(sdir, "bisect", result)
    info.update(exit_code=0, finished=time.time(), backend=result.get("backend"))
    write_info(sdir, info)
    return result


def _open_session(
    script: str, args, backend: str | None, check: str, session_dir, env: dict | None = None
) -> tuple[Path, dict]:
    """Validate --check and --backend, then create the bisect's session folder and its info file
    (before any run, so a refused argument leaves nothing behind)."""
    if check not in CHECKS:
        raise FxlensError(f"--check {check!r}: expected one of {', '.join(CHECKS)}")
    if backend:
        check_spec(backend)
    sdir = Path(session_dir) if session_dir else new_session_dir(config.load().sessions_dir, script)
    sdir.mkdir(parents=True, exist_ok=True)
    info = {"script": os.path.abspath(script), "argv": list(args), "backend": backend, "command": "bisect"}
    # the whole command, for the bug report: `-m`, the script's arguments, the switches it ran under
    info.update(
        module=module_of(script), check=check, env=config.reproducing_env({**os.environ, **(env or {})})
    )
    info.update(started=time.time(), exit_code=None)
    write_info(sdir, info)
    return sdir, info


def _start_warm(runs: Runs, script: str, env: dict) -> str:
    """Start the warm server the runs fork from (`fxlens.bisect.forked_runs`), unless runs must start in
    new interpreters; says which, for the first line. First, before any run: the runs' inductor
    cache dir, outside the session (see cache.CACHE_PREFIX); a killed bisect's is removed then."""
    claim_cache(runs.session_dir)
    if config.load_bisect().fresh_runs:
        return "each run a new interpreter: FXLENS_BISECT_FRESH_RUNS=1"
    if setter := sets_environment(script):
        who = "the script" if Path(setter) == Path(script).resolve() else short_path(setter)
        return f"each run a new interpreter: {who} sets environment variables torch may read at import"
    runs.warm = WarmServer({**cache_env(runs.session_dir), **env})
    return "each run forked from a process that imported torch once"


def _stage(stage: str, out: Outcome | None, counted: bool = True, note: str = "") -> dict:
    ok = out is None or not out.failed or not counted
    row = {"stage": stage, "ok": ok, "error": None if out is None or not out.failed else out.error}
    if out is not None and out.failed and not counted:
        row["note"] = f"{out.kind} ignored with this --check"
    if out is not None and not out.failed and out.as_eager:
        raised = out.eager_raised.get(out.as_eager[0])
        row["note"] = f"raises what eager raises ({raised})" if raised else "raises what eager raises"
    if note:
        row["note"] = note
    return row


def _bisect(runs: Runs, script: str, args: list[str], backend: str | None, check: str, torch_bisector):
    counts = COUNTS[check]

    def fails(out: Outcome) -> bool:
        return out.kind in counts

    _check_kernels(runs, backend, check)
    top, references = _first_run(runs, script, backend)
    if backend is None:
        targets = [b for b in top.asked if b not in references]
        if len(targets) > 1:
            raise FxlensError(
                f"{script} compiles with several backends ({', '.join(targets)}): pick one with --backend"
            )
        backend = targets[0] if targets else "inductor"
    lad = ladder(backend)
    _check_kernels(runs, backend, check)
    base = {"backend": backend, "ladder": lad, "first_failing_stage": None, "culprit": None}
    base.update(kernel=None, fusion=None, compiler_bisector=None, failure=None, graph=None)
    base["references"] = references
    if not fails(top):
        base.update(outcome="nothing_fails", stages=[_stage(backend, top, counted=False)])
        return base
    stages: list[dict] = []
    below: list[Outcome] = []
    first_bad, bad_out = backend, top
    for stage in lad[:-1]:
        out = runs.run(stage, stage=stage)
        below.append(out)
        stages.append(_stage(stage, out, counted=fails(out)))
        if fails(out):
            first_bad, bad_out = stage, out
            break
    if first_bad == backend:
        stages.append(_stage(backend, top))
    base.update(stages=stages, first_failing_stage=first_bad)
    base["failure"] = {"kind": bad_out.kind, "error": bad_out.error, "divergence": bad_out.divergence}
    base["failure"]["outside_graphs"] = bad_out.outside
    # the failing call compared with what eager did on it ("eager raises X, S returns a value")
    base["failure"]["vs_eager"] = bad_out.mismatch or None
    # the script's own check failed on a value that passes the fp64 rule: its tolerance is the issue
    base["failure"]["eager_diff"] = bad_out.closer if bad_out.kind == "accuracy" and bad_out.outside else None
    # the inductor code that raised, from the run's traceback (CompilerBisector names a pass to disable)
    base["failure"]["site"] = crash_site(run_output(bad_out.session_dir)) if bad_out.kind == "crash" else None
    if first_bad == lad[0]:
        return _eager_fails(runs, base, bad_out, fails)
    good = lad[lad.index(first_bad) - 1]
    good_out = below[lad.index(first_bad) - 1]
    return _narrow_graph(runs, base, first_bad, good, bad_out, good_out, torch_bisector)


def _first_run(runs: Runs, script: str, backend: str | None) -> tuple[Outcome, list[str]]:
    """Run 1, and the reference calls of a script that compares a backend with `eager`/`aot_eager`.

    Such a script (the usual bug report) keeps its reference calls as they are in every later run
    (FXLENS_OVERRIDE_KEEP); only the other calls are stepped. Without --backend, run 1 compiles
    every call with its own backend anyway, so it needs no keep list; its reference graphs are
    then dropped from its outcome. With --backend, run 1 keeps the references, unless they are
    all the script has: then it is repeated with every call stepped.
    Returns (outcome, the reference backends kept).
    """
    refs = [b for b in config.REFERENCE_BACKENDS if b != backend]
    runs.extra_env[config.ENV_OVERRIDE_KEEP] = ",".join(refs) if backend else ""
    top = runs.run(backend or "as-asked", stage=backend or "@asked")
    if backend and not top.compiled and top.asked and all(b in refs for b in top.asked):
        runs.extra_env[config.ENV_OVERRIDE_KEEP] = ""
        top = runs.run(f"{backend} (every call)", stage=backend)
    if not top.compiled and not top.asked:
        if top.exit_code != 0:
            why = "" if top.kind == "timeout" else f" ({top.error or 'see ' + str(top.session_dir)})"
            raise FxlensError(
                f"{script} {how_it_ended(top.exit_code, runs.timeout)} before compiling anything{why}"
            )
        raise FxlensError(f"{script} never called torch.compile: nothing to bisect")
    references = [b for b in top.asked if b in refs]
    if not references or all(b in refs for b in top.asked):
        runs.extra_env[config.ENV_OVERRIDE_KEEP] = ""
        return top, []
    runs.extra_env[config.ENV_OVERRIDE_KEEP] = ",".join(references)
    return (top if backend else top.without(references)), references


def _check_kernels(runs: Runs, backend: str | None, check: str) -> None:
    # fxlens's kernels can compare themselves with an fp64 ATen replay: a free first guess
    if backend and can(ladder(backend)[-1], "codegen") and check != "crash":
        runs.extra_env[ENV_CHECK_KERNELS] = "1"


def _eager_fails(runs: Runs, base: dict, bad_out: Outcome, fails) -> dict:
    """The bottom of the ladder fails: is it the script itself, or Dynamo's graph capture?"""
    plain = runs.run(
        "no torch.compile (TORCHDYNAMO_DISABLE=1)", stage="eager", env={"TORCHDYNAMO_DISABLE": "1"}
    )
    base["stages"].append(_stage("no_compile", plain))
    if fails(plain):
        base["outcome"] = "script_fails"
        base["first_failing_stage"] = None
        return base
    base["outcome"] = "eager_fails"
    if bad_out.failing:
        ordinal = bad_out.failing[0]
        base["culprit"] = culprit_of(bad_out, ordinal)
        base["graph"] = {"ordinal": ordinal, "of": len(bad_out.graphs)}
    return base


def _narrow_graph(runs, base, stage, good, bad_out, good_out, torch_bisector) -> dict:
    kind = bad_out.kind
    n = max(len(good_out.graphs), len(bad_out.graphs))
    last = {"out": bad_out}

    def reproduces(lo: int, hi: int) -> bool:
        label = f"{stage} on graph {lo}" if lo == hi else f"{stage} on graphs {lo}-{hi}"
        out = runs.run(label, stage=stage, good=good, graphs=f"{lo}-{hi}")
        if out.kind == kind:
            last["out"] = out
        return out.kind == kind

    hint = bad_out.failing[0] if bad_out.failing else None
    handover = can(stage, "torch_bisectable") and torch_bisector
    if handover and n > 1 and bad_out.recorded and kind in ("crash", "accuracy", "no_raise"):
        # the failing run's wrapper saw graph `hint` itself fail: no run to confirm it alone;
        # the CompilerBisector steps confirm it on the way (or give it back, unconfirmed)
        if _recorded_graph(runs, base, stage, good, bad_out, good_out, hint):
            return base
    found = narrow(n, reproduces, hint)
    if found.single is None:
        again = runs.run(f"{stage} again (all graphs)", stage=stage)
        if again.kind != kind:
            base["outcome"] = "flaky"
            return base
        base["outcome"] = "needs_several_graphs"
        base["graph"] = {"ordinal": found.lo, "to": found.hi, "of": n}
        base["culprit"] = culprit_of(bad_out, found.lo)
        return base
    ordinal = found.single
    confirm = last["out"]
    base["outcome"] = "fails"
    base["graph"] = {"ordinal": ordinal, "of": n}
    base["culprit"] = culprit = culprit_of(confirm, ordinal, fallback=(bad_out, good_out))
    if can(stage, "codegen"):
        kernel = find_kernel(runs, confirm, stage, good, ordinal, culprit["compile_id"], kind)
        base["kernel"] = kernel
        if kernel:
            culprit.update(kernel=kernel.get("name"), ops=kernel.get("ops"))
        if can(stage, "fuses"):
            graph_kind = (kernel or {}).get("graph")
            base["fusion"] = find_fusion(
                runs, confirm, stage, good, ordinal, culprit["compile_id"], kind, graph_kind
            )
    elif handover:
        # the failure the steps must reproduce to count (`inductor.same_failure`): the confirming run's
        error = confirm.error if confirm.kind == kind else bad_out.error
        say_stage_verdict(runs, base)
        base["compiler_bisector"] = hand_over(
            runs, stage, _plain(base, good), ordinal, kind, error=error, estimate_from=confirm
        )
    return base


def _plain(base: dict, good: str) -> str:
    # the other graphs run aot_eager, not aot_eager_decomp_partition: torch applies the
    # bisector's inductor config changes to that backend's functorch config too, and crashes
    return base["ladder"][1] if len(base["ladder"]) > 2 else good


def _recorded_graph(runs, base, stage, good, bad_out, good_out, ordinal: int) -> bool:
    """The culprit graph as the failing run recorded it, handed to CompilerBisector without a
    confirming run of its own; False (base untouched) when the steps did not confirm it."""
    n = max(len(good_out.graphs), len(bad_out.graphs))
    found = {"outcome": "fails", "culprit": culprit_of(bad_out, ordinal, fallback=(good_out,))}
    found["graph"] = {"ordinal": ordinal, "of": n, "from": f"run {bad_out.n}'s own record"}
    say_stage_verdict(runs, {**base, **found})
    cb = hand_over(
        runs,
        stage,
        _plain(base, good),
        ordinal,
        bad_out.kind,
        confirmed=False,
        error=bad_out.error,
        estimate_from=bad_out,
    )
    if cb.get("unconfirmed"):
        runs.echo(f"  graph {ordinal} did not fail alone ({cb['unconfirmed']}): narrowing by runs instead")
        return False
    base.update(found, compiler_bisector=cb)
    return True
