"""One `fxlens minify` run, phase by phase, once its session and worker pool exist.

`run_pipeline(run)`: capture (the script once, under the capturing backend, while the parent warms
up), confirm (the failing graph compiled alone: the spec and signature reduction keeps), the AOT
level (for failures that need backward), reduce (on the pool), then write and verify the
reproducer and assemble the `fxlens minify --json` result. `MinifyRun` carries what every phase
reads; each phase hands the next a small record of what it found.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from fxlens.capture import children
from fxlens.errors import FxlensError
from fxlens.minify.after import after_return
from fxlens.minify.child import (
    capture_failing_run,
    first_backend,
    last_error_line,
    no_failure_error,
)
from fxlens.minify.confirm import base_spec, confirm, load_candidate, usable
from fxlens.minify.partial import copy_atomic, save_partial
from fxlens.minify.script_config import not_set_by_script
from fxlens.report.exits import TIMEOUT_EXIT, how_it_ended
from fxlens.report.minify_result import MinifyResult
from fxlens.report.outputs import write_json
from fxlens.trace.session import append_event


@dataclass
class MinifyRun:
    """What every phase of one minify run reads; `closers` are called when it ends, however."""

    script: str
    script_args: list[str]
    backend: str | None
    check: str
    out: str | None
    json_path: str | None
    progress: bool
    cfg: object  # config.MinifyConfig
    t0: float
    session: Path
    pool: object  # fxlens.minify.workers.Pool
    timeout: float | None = None
    timings: dict[str, float] = field(default_factory=dict)
    closers: list = field(default_factory=list)

    def lap(self, name: str) -> None:
        """Seconds since the last lap (since the start for the first), as timings[name]."""
        lap = time.perf_counter() - self.t0 - sum(self.timings.values())
        self.timings[name] = round(self.timings.get(name, 0.0) + lap, 2)  # a phase run twice: both

    def no_failure(self, cap: _Captured) -> FxlensError:
        return no_failure_error(
            self.script,
            self.script_args,
            self.session,
            cap.exit_code,
            cap.stderr_text,
            cap.graphs,
            self.backend or "(the script's own)",
            self.check,
        )


@dataclass
class _Captured:
    """The script's own run: its capture folder, how it ended, its graphs and which to try."""

    cap: Path
    exit_code: int
    stderr_text: str
    graphs: list
    failed: dict | None  # the graph that failed in the script, as the capturing backend saw it
    todo: list  # graphs to confirm, in order
    baseline: list[str]  # torch config lines as they are by default (the reproducer omits them)


@dataclass
class _Confirmed:
    """The graph that fails alone: its number, meta, candidate, spec (signature set) and flakiness."""

    k: int
    meta: dict
    cand: object
    spec: object  # ReproSpec
    sig: str
    flaky: bool
    # taken from the capture run's own record, not yet compiled alone (`_from_record`)
    deferred: bool = False


@dataclass
class _Reduced:
    """The reduction: the graph it started from and its spec (ATen level or Dynamo), and its best."""

    cand: object  # the graph reduction started from (the ATen graph at the AOT level)
    spec: object
    final: object
    reducer: object
    dynamo_nodes: int
    aot_note: str | None
    interrupted: int  # the exit status an interrupt asks for: 130 (Ctrl-C) or 143 (SIGTERM); else 0
    zygote: object


def run_pipeline(run: MinifyRun) -> dict:
    """Capture, confirm, reduce, write: the `fxlens minify --json` dict."""
    captured = _capture_phase(run)
    confirmed = _confirm_phase(run, captured)
    reduced = _reduce_phase(run, confirmed)
    if confirmed.deferred and not reduced.interrupted and reduced.final.num_calls >= confirmed.cand.num_calls:
        # nothing smaller failed as the capture did: the graph compiled alone is asked after all
        # (what it fails with, under which inputs; or the one-line reason it does not fail)
        checked = _confirm_phase(run, captured, trust_record=False)
        if (checked.spec, checked.sig) != (confirmed.spec, confirmed.sig):
            reduced = _reduce_phase(run, checked)
        confirmed = checked
    run.pool.close()
    return _finish(run, captured, confirmed, reduced)


def _capture_phase(run: MinifyRun) -> _Captured:
    """Run the script once under the capturing backend; the graphs to confirm, failing one first."""
    from fxlens.minify.capture import baseline_config_lines, captured_graphs, failing_graph

    # the parent idles while the script runs: have the workers resolve and warm up the backend as
    # soon as the script names it (each probes the config baseline as it warms up). Without spare
    # cores (the pool did not spawn up front) that waits until the script compiles: it would only
    # slow the script's own run, and be wasted when there is nothing to minify
    captured = threading.Event()

    def meanwhile() -> None:
        if run.pool.spawned:
            spec = run.backend or first_backend(run.session / "capture", captured)
        else:
            first = first_backend(run.session / "capture", captured)
            spec = (run.backend or first) if first else None
        if spec:
            run.pool.set_backend(spec)
            run.pool.prepare()

    warmer = threading.Thread(target=meanwhile, daemon=True)
    warmer.start()
    try:
        cap, exit_code, stderr_text = capture_failing_run(
            run.script, run.script_args, run.backend, run.check, run.session, run.timeout
        )
    finally:
        captured.set()
    warmer.join()
    run.lap("capture")
    graphs = captured_graphs(cap)
    if exit_code == TIMEOUT_EXIT and run.timeout and not graphs:
        raise FxlensError(f"{run.script} {how_it_ended(exit_code, run.timeout)} before compiling anything")
    failed = failing_graph(cap, exit_code)
    todo = [failed["graph"]] if failed else ([] if exit_code == 0 else graphs)
    found = _Captured(cap, exit_code, stderr_text, graphs, failed, todo, [])
    if not todo:
        raise run.no_failure(found)
    # from a worker's probe; in this process only when no worker could start (it imports Dynamo)
    found.baseline = run.pool.baseline() or baseline_config_lines()
    # and the lines whose setting the script never names: torch's or another tool's, not the script's
    found.baseline = sorted(set(found.baseline) | not_set_by_script(run.script, cap))
    return found


def _from_record(run: MinifyRun, captured: _Captured) -> _Confirmed | None:
    """The failing graph as the capture run recorded it, without compiling it alone first, when
    that record settles what confirming would: the backend's compile of graph k raised, so the
    same graph with inputs of the same shapes, forward only, compiles the same way. Reduction
    then starts at once; its candidates and the reproducer's fresh re-runs check the failure, and
    when no candidate fails (`run_pipeline`), the graph is compiled alone after all.

    Only for a compiler registered under a name (inductor, fxlens's stages, torch's own): a
    callable the script or a module defines may fail only some of the time, and compiling the
    graph alone a few times at once is how such a flaky backend shows before reduction."""
    failed = captured.failed or {}
    sig = failed.get("signature")
    crash_only = run.check in ("auto", "crash") and failed.get("kind") == "crash"
    if not (crash_only and failed.get("phase") == "compile" and usable(sig)):
        return None
    k = failed["graph"]
    meta = json.loads((captured.cap / f"graph_{k}.json").read_text())
    if ":" in str(meta.get("backend")):  # module:attr or file.py:attr: not one we can vouch for
        return None
    meta, _, cand = load_candidate(captured.cap, k)
    base = base_spec(meta, run.check, captured.failed, captured.baseline, run.session)
    spec = replace(base, values_path=None, check="crash", signature=sig)
    # a hung candidate: allowed as long as the script's whole run took (it compiled the graph)
    run.pool.timeout = max(run.pool.timeout, 2 * run.timings.get("capture", 0))
    return _Confirmed(k, meta, cand, spec, sig, flaky=False, deferred=True)


def _confirm_phase(run: MinifyRun, captured: _Captured, trust_record: bool = True) -> _Confirmed:
    """The first graph to try that fails compiled alone, with the spec and signature it fails under
    (or, `trust_record`, the capture run's own record of it: `_from_record`)."""
    cap, pool = captured.cap, run.pool
    child_sig = (captured.failed or {}).get("signature")
    pool.set_backend(
        run.backend or json.loads((cap / f"graph_{captured.todo[0]}.json").read_text())["backend"]
    )
    if trust_record and (found := _from_record(run, captured)) is not None:
        run.lap("confirm")
        return found
    found = None
    # no graph failed in the script's run: what the script did with the outputs when it failed
    after = after_return(captured.stderr_text) if captured.failed is None else ()
    for k in captured.todo:
        meta, values_path, cand = load_candidate(cap, k)
        base = base_spec(meta, run.check, captured.failed, captured.baseline, run.session)
        t_confirm = time.perf_counter()
        spec, sig, flaky, seen = confirm(pool, cand, base, values_path, child_sig, after)
        # a candidate may take as long as the whole graph did (slow compilers on a busy machine);
        # not when the failure is a hang: the confirm then took the timeout itself
        if sig != "timeout":  # pool.TIMEOUT_SIGNATURE (imported lazily: pool imports this package)
            pool.timeout = max(pool.timeout, 5 * (time.perf_counter() - t_confirm))
        if spec is not None:
            found = _Confirmed(k, meta, cand, spec, sig, flaky)
            break
    if found is None and captured.failed is None:  # the script failed, but no compiled graph does
        raise run.no_failure(captured)
    if found is None:
        from fxlens.minify.fidelity import differences

        child_sig = child_sig or last_error_line(captured.stderr_text)
        diff = differences(meta, cand, base.config_lines, captured.baseline)
        why = "; ".join(diff) if diff else "ops, mutations, constants, inputs and config all match"
        raise FxlensError(
            f"{run.script}: graph {captured.todo[0]} fails in the script ({child_sig}) but not when compiled "
            f"alone with {meta['backend']} (isolated: {seen[0] or 'passes'}; compared with the graph the "
            f"backend saw: {why})"
        )
    if run.check == "auto" and found.spec.check == "accuracy" and not found.sig.startswith("AccuracyError"):
        found.spec = replace(found.spec, check="crash")  # an exception: crash mode gives the same signature
    found.spec = replace(found.spec, signature=found.sig)
    run.lap("confirm")
    return found


def _reduce_phase(run: MinifyRun, confirmed: _Confirmed) -> _Reduced:
    """Move to the ATen graph when the failure needs backward, then reduce on the pool."""
    from fxlens.minify.reduce import FLAKY_RETRIES, ProgressBar, Reducer, reduce
    from fxlens.minify.repro_writer import render
    from fxlens.minify.verify import Zygote

    pool, cand, spec = run.pool, confirmed.cand, confirmed.spec
    dynamo_nodes, aot_note = cand.num_calls, None
    if spec.backward and not spec.mutate:  # the failure needs backward: find the ATen graph it lives in
        cand, spec, aot_note = _aot_level(pool, cand, spec, run.session)
        run.lap("aot_capture")
    # the reproducer's re-runs fork from a zygote that imports torch while the reduction runs: the
    # pool's (its workers were forked from it) when there is one
    zygote = None if run.cfg.fresh_reruns else (pool.zygote or Zygote(_preload(spec)))
    if zygote is not None and zygote is pool.zygote:
        zygote.start(_preload(spec))  # (already started for the workers, unless none was prepared)
    elif zygote is not None:
        run.closers.append(zygote.close)
    bar = ProgressBar(original=cand.num_calls) if run.progress else None
    # a flaky failure: a candidate that passes is tried again before it counts as passing
    retries = FLAKY_RETRIES if confirmed.flaky else 0
    reducer = Reducer(
        pool.evaluate, lambda c: render(c, spec), confirmed.sig, pool.size, bar, retries=retries
    )
    interrupted = 0
    try:
        final = reduce(reducer, cand)
    except KeyboardInterrupt as e:
        interrupted = 143 if isinstance(e, children.Terminated) else 130
        final = reducer.best or cand
    if bar:
        bar.done()
    # every distinct candidate's signature, for a look at what the reduction saw
    (run.session / "queries.json").write_text(json.dumps(reducer.memo, indent=1))
    run.lap("reduce")
    return _Reduced(cand, spec, final, reducer, dynamo_nodes, aot_note, interrupted, zygote)


def _finish(run: MinifyRun, captured: _Captured, confirmed: _Confirmed, reduced: _Reduced) -> dict:
    """Write and verify the reproducer; the result, recorded in the session (and --json)."""
    spec, cand, final, reducer = reduced.spec, reduced.cand, reduced.final, reduced.reducer
    result = _write(run, spec, cand, final, reducer, reduced.interrupted, reduced.zygote)
    result.update(
        check=spec.check,
        signature=confirmed.sig,
        original_nodes=cand.num_calls,
        final_nodes=final.num_calls,
        queries=reducer.queries,
        seconds=round(time.perf_counter() - run.t0, 2),
        backend=spec.backend,
        graph=confirmed.k,
        graphs=len(captured.graphs),
        session=str(run.session),
        backward=spec.backward or spec.level == "backward",
        # the graph reduced: Dynamo's, run forward (and backward when only that fails) by the
        # backend; or the AOTAutograd forward/backward graph, compiled by its inner compiler
        level=spec.level_name,
        aot_graph=None if spec.level == "dynamo" else spec.level,
        dynamo_nodes=reduced.dynamo_nodes,
        dynamic=spec.dynamic,
        flaky_in_reduction=confirmed.flaky,
        # how the failing graph was known to fail before reduction: compiled alone on the pool, or
        # the capture run's own record of its compile raising (`_from_record`)
        confirmed_by="capture_record" if confirmed.deferred else "isolated",
        retries=reducer.retried,
        values_saved=spec.values_path is not None,
        # inputs whose recorded values could not be saved, and why (a wrapper tensor subclass)
        values_unsaved=confirmed.meta.get("unsaved") or {},
        original_input_bytes=cand.input_bytes,
        final_input_bytes=final.input_bytes,
        interrupted=bool(reduced.interrupted),
        interrupted_exit=reduced.interrupted,
    )
    if reduced.aot_note:
        result["aot_note"] = reduced.aot_note
    run.lap("write_and_verify")
    run.timings["of_which_verify"] = result.pop("verify_seconds")
    # when the last worker had imported torch and warmed Dynamo up (seconds after the pool started)
    run.timings["workers_warm_at"] = run.pool.warm_at()
    result["timings"] = run.timings
    result["summary"] = summary_line(result)
    # the one result object: a key the contract does not declare is a TypeError here, not a surprise
    result = MinifyResult(**result).to_json()
    append_event(run.session, "minify", result)
    if run.json_path:
        write_json(result, run.json_path)
    return result


def _preload(spec) -> list[str]:
    """Modules the reproducer's backend compiles with (imported ahead by the zygote)."""
    from fxlens.minify.verify import preload_for

    return preload_for(spec.backend, spec.inner)


def _aot_level(pool, cand, spec, session: Path):
    """(candidate, spec, note): the AOTAutograd graph (forward or backward) that fails alone with
    the backend's inner compiler, when the backend has one fxlens knows; else the Dynamo graph
    as it was, with the reason in the note."""
    from fxlens.minify.aot import find_failing

    found, why = find_failing(pool, cand, spec, spec.signature, session / "aten")
    if found is None:
        return cand, spec, f"reduced at the Dynamo level: {why}"
    aten, aten_spec = found
    return aten, replace(aten_spec, signature=spec.signature), None


def _write(run: MinifyRun, spec, cand, final, reducer, interrupted: int, zygote) -> dict:
    """Verify the reproducer in fresh interpreters (in the session), then copy it to its place."""
    from fxlens.minify.repro_writer import claim, default_name, release

    cfg, out = run.cfg, run.out
    target = Path(out or (cfg.repro_dir / default_name(run.script, spec.backend, spec.check)))
    if interrupted:  # never under a name that looks finished (nor at --out): NAME.partial.py
        target = target.with_name(target.stem + ".partial.py")
    also = (".pt",) if spec.values_path else ()
    # claimed now, before the reproducer names its .pt file after it: another run's file under the
    # same default name is never replaced
    target = claim(target, numbered=bool(interrupted or not out), also=also)
    try:
        return _write_claimed(run, spec, cand, final, reducer, interrupted, zygote, target)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM while verifying: keep what reduction found
        release(target, also)
        if not interrupted:
            save_partial(run.session / "repro" / target.name, target, also)
        raise
    except BaseException:
        release(target, also)
        raise


def _write_claimed(
    run: MinifyRun, spec, cand, final, reducer, interrupted: int, zygote, target: Path
) -> dict:
    from fxlens.minify.repro_writer import header, render, verify

    script, script_args, session, cfg = run.script, run.script_args, run.session, run.cfg
    values_expr = None
    work = session / "repro"
    work.mkdir(exist_ok=True)
    if spec.values_path:
        values_name = target.with_suffix(".pt").name
        shutil.copyfile(spec.values_path, work / values_name)
        values_expr = f"os.path.join(os.path.dirname(os.path.abspath(__file__)), {values_name!r})"
    note = "interrupted: the best reproducer found so far, not re-verified" if interrupted else ""
    text = render(
        final,
        spec,
        header(
            script=script,
            script_args=script_args,
            spec=spec,
            original_nodes=cand.num_calls,
            final_nodes=final.num_calls,
            queries=reducer.queries,
            note=note,
        ),
        values_expr,
    )
    staged = work / target.name
    staged.write_text(text)
    t_verify = time.perf_counter()
    # a hang is re-checked with the candidates' timeout (not the 300 s a slow compile may need)
    vt = cfg.timeout if spec.signature == "timeout" else 300
    ok = 0 if interrupted else verify(staged, spec.signature, cfg.reruns, timeout=vt, zygote=zygote)
    verify_s = round(time.perf_counter() - t_verify, 2)
    copy_atomic(staged, target)  # over the empty file claimed for it: ours
    if spec.values_path:
        copy_atomic(work / target.with_suffix(".pt").name, target.with_suffix(".pt"))
    return {
        "repro": str(target),
        "reproduced": f"{ok}/{0 if interrupted else cfg.reruns}",
        "flaky": 0 < ok < cfg.reruns,
        "verify_seconds": verify_s,
    }


def summary_line(r: dict) -> str:
    """One line for the session, the TUI and the terminal."""
    if r.get("interrupted"):
        state = "interrupted, best so far, not re-verified"
    elif r.get("flaky"):
        state = f"FLAKY: reproduced {r['reproduced']} fresh runs"
    elif r["reproduced"].startswith("0/"):
        state = f"did NOT reproduce in {r['reproduced'].split('/')[1]} fresh runs"
    else:
        state = f"reproduced {r['reproduced']} fresh runs"
    return (
        f"{r['original_nodes']} -> {r['final_nodes']} nodes in {r['queries']} queries, "
        f"{r['seconds']:.1f}s; {r['check']}: {r['signature']}; {state}; {r['repro']}"
    )
