"""`fxlens minify SCRIPT [ARGS...]`: shrink a failing compiled model to a standalone reproducer.

1. Capture: run SCRIPT once in a child with a capturing wrapper around the real backend
   (`fxlens.minify.capture`): every Dynamo graph saved as code, the failing one named.
2. Confirm: compile that graph alone in a worker; its failure signature is what reduction keeps.
3. Reduce (`fxlens.minify.reduce`) on a pool of worker processes (`fxlens.minify.pool`).
4. Write (`fxlens.minify.repro_writer`): re-run the reproducer 3 times in fresh interpreters first.

`minify_script()` is the Python entry point (`fxlens demo` uses it); `main()` is the CLI.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import shutil
import threading
import time
from dataclasses import replace
from pathlib import Path

from fxlens import config
from fxlens.capture import children
from fxlens.capture.command import TIMEOUT_EXIT, add_timeout_argument, check_script, how_it_ended
from fxlens.errors import FxlensError
from fxlens.minify.child import (
    _capture,
    _first_backend,
    _last_error_line,
    _no_failure_error,
    reference_backend,
)
from fxlens.report.command import add_format_arguments, write_formatted, write_json
from fxlens.trace.session import append_event, new_session_dir, write_info

CHECKS = ("crash", "accuracy", "auto")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--backend",
        metavar="NAME",
        help="the failing backend: a name, module:attr or path.py:attr (default: the script's own)",
    )
    parser.add_argument(
        "--check",
        choices=CHECKS,
        default="auto",
        help="what counts as failing: an exception, divergence from an fp64 reference, or whichever "
        "the script shows (default)",
    )
    parser.add_argument(
        "--out",
        metavar="FILE",
        help="reproducer path, or an existing folder (or one ending in /) for a fresh name in it "
        "(default repro_cases/minify_*.py); an existing file is never overwritten",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the result as JSON to FILE")
    add_format_arguments(parser)
    add_timeout_argument(parser, "the script's own run (each candidate: FXLENS_MINIFY_TIMEOUT, 120)")


def validate_backend(spec: str) -> None:
    """Refuse a backend spec that cannot work, without running any user code."""
    if ":" in spec:
        target, _, attr = spec.rpartition(":")
        if target.endswith(".py"):
            if not Path(target).is_file():
                raise FxlensError(f"backend {spec!r}: no such file {target}")
            if not re.search(
                rf"^\s*(def\s+{re.escape(attr)}\b|{re.escape(attr)}\s*=)", Path(target).read_text(), re.M
            ):
                raise FxlensError(f"backend {spec!r}: {target} defines no {attr!r}")
            return
        try:
            getattr(importlib.import_module(target), attr)
        except (ImportError, AttributeError) as e:
            raise FxlensError(f"backend {spec!r}: {e}") from None
        return
    from fxlens.capture.backends import known_names

    names = known_names()
    if spec not in names:
        raise FxlensError(f"unknown backend {spec!r} (known: {', '.join(names)})")


def _carried_env() -> tuple[tuple[str, str], ...]:
    from fxlens.minify.repro_writer import CARRIED_ENV

    return tuple((k, os.environ[k]) for k in CARRIED_ENV if os.environ.get(k))


def _usable(sig: str | None) -> bool:
    return bool(sig) and not sig.startswith(("eager:", "candidate error", "worker exited"))


def _confirm(pool, cand, base_spec, values_path: Path | None, child_sig: str | None):
    """Compile the captured graph alone: the spec (inputs random or recorded, forward or also
    backward) under which it fails, its signature (the script's own preferred), whether it is
    flaky, and every signature seen. Options are tried in order, cheapest first, each a few times
    at once on the pool: a failure that does not show every time is flaky."""
    from fxlens.minify.repro_writer import render

    options = [replace(base_spec, values_path=None)]
    if values_path is not None and values_path.exists():
        options.append(replace(base_spec, values_path=str(values_path)))
    if any(s.requires_grad for s in cand.inputs):
        options += [replace(o, backward=True) for o in options]
    reps = min(max(2, pool.size), 4)
    seen: list = []
    fallback = None
    for o in options:
        sigs = pool.evaluate([render(cand, o)] * reps)
        seen += sigs
        hits = [s for s in sigs if _usable(s)]
        if not hits:
            continue
        sig = child_sig if child_sig in hits else max(set(hits), key=hits.count)
        # flaky: the same graph also passed (a run that failed differently, a timeout on a busy
        # machine say, does not make it flaky)
        found = (o, sig, None in sigs)
        if sig == child_sig or child_sig is None:
            return (*found, seen)
        fallback = fallback or found
    return (*(fallback or (None, None, False)), seen)


def minify_script(
    script: str,
    script_args: list[str] | None = None,
    backend: str | None = None,
    check: str = "auto",
    out: str | None = None,
    *,
    out_dir: str | None = None,
    json_path: str | None = None,
    progress: bool = True,
    timeout: float | None = None,
) -> dict:
    """Minify SCRIPT's failing compiled graph into a standalone reproducer.

    Args:
        script: the user's script (run as `__main__` in a child process).
        script_args: its arguments.
        backend: the failing backend spec; None: the one the script passes to torch.compile.
        check: "crash", "accuracy" or "auto".
        out: reproducer path; None: a fresh name in `out_dir`.
        out_dir: where a default-named reproducer goes; None: FXLENS_REPRO_DIR (repro_cases/).
        json_path: also write the result there.
        progress: draw the progress bar on stderr.
        timeout: seconds the script's own (capture) run may take; None: no limit.

    Returns:
        The `fxlens minify --json` dict: repro, check, signature, original_nodes, final_nodes,
        queries, seconds (and more: reproduced, flaky, session, input bytes, ...).

    Raises:
        FxlensError: bad input, or nothing to minify (with the reason, one line).
    """
    from fxlens.minify.pool import Pool
    from fxlens.report.command import check_writable

    script_args = list(script_args or [])
    check_script(script)
    check_writable(json_path)
    if out:  # an existing file is never overwritten (it may be someone's reproducer)
        if os.path.lexists(out):
            raise FxlensError(f"--out {out}: already exists; remove it or choose another name")
        check_writable(out, "--out")
    if check not in CHECKS:
        raise FxlensError(f"--check {check!r}: expected one of {', '.join(CHECKS)}")
    if backend:
        validate_backend(backend)
    cfg = config.load_minify()
    if out_dir:
        cfg = replace(cfg, repro_dir=Path(out_dir))
    t0 = time.perf_counter()
    session = new_session_dir(config.load().sessions_dir, script)
    write_info(
        session,
        {
            "script": os.path.abspath(script),
            "argv": script_args,
            "command": "minify",
            "backend": backend,
            "check": check,
            "started": time.time(),
        },
    )

    timings: dict[str, float] = {}
    # workers import torch while the script runs; told the backend once it is known
    pool = Pool(size=cfg.workers, timeout=cfg.timeout, log_dir=session / "workers", cwd=os.getcwd())
    closers: list = []
    try:
        return _minify(
            script,
            script_args,
            backend,
            check,
            out,
            json_path,
            progress,
            cfg,
            t0,
            session,
            timings,
            pool,
            closers,
            timeout,
        )
    finally:
        pool.close()
        for close in closers:
            close()


def _minify(
    script,
    script_args,
    backend,
    check,
    out,
    json_path,
    progress,
    cfg,
    t0,
    session,
    timings,
    pool,
    closers,
    timeout=None,
):
    """The body of minify_script, with its worker pool already starting; what it starts besides
    goes into `closers` (called when it is done, however it ends)."""
    from fxlens.minify.capture import baseline_config_lines, captured_graphs, failing_graph
    from fxlens.minify.graph import InputSpec, candidate_from_module, load_graph_module
    from fxlens.minify.reduce import FLAKY_RETRIES, ProgressBar, Reducer, reduce
    from fxlens.minify.repro_writer import ReproSpec, render
    from fxlens.minify.verify import Zygote

    # the parent idles while the script runs: import torch and probe the config baseline meanwhile,
    # and have the workers resolve and warm up the backend as soon as the script names it
    warm: dict = {}
    captured = threading.Event()

    def meanwhile() -> None:
        warm.update(baseline=baseline_config_lines())
        spec = backend or _first_backend(session / "capture", captured)
        if spec:
            pool.set_backend(spec)
            pool.prepare()

    warmer = threading.Thread(target=meanwhile, daemon=True)
    warmer.start()
    try:
        cap, exit_code, stderr_text = _capture(script, script_args, backend, check, session, timeout)
    finally:
        captured.set()
    warmer.join()
    timings["capture"] = round(time.perf_counter() - t0, 2)
    graphs = captured_graphs(cap)
    if exit_code == TIMEOUT_EXIT and timeout and not graphs:
        raise FxlensError(f"{script} {how_it_ended(exit_code, timeout)} before compiling anything")
    failed = failing_graph(cap, exit_code)
    backend_desc = backend or "(the script's own)"
    todo = [failed["graph"]] if failed else ([] if exit_code == 0 else graphs)
    if not todo:
        raise _no_failure_error(
            script, script_args, session, exit_code, stderr_text, graphs, backend_desc, check
        )

    baseline = warm.get("baseline") or baseline_config_lines()
    pool.set_backend(backend or json.loads((cap / f"graph_{todo[0]}.json").read_text())["backend"])
    found = None
    for k in todo:
        meta = json.loads((cap / f"graph_{k}.json").read_text())
        values_path = cap / f"values_{k}.pt"
        specs = [InputSpec.from_json(s) for s in meta["inputs"]]
        values = _load_values(values_path) if values_path.exists() else {}
        example = [_restore(values.get(f"arg{i}"), s) for i, s in enumerate(specs)]
        try:
            cand = candidate_from_module(load_graph_module((cap / f"graph_{k}.py").read_text()), example)
        except Exception as e:  # a graph fx cannot re-trace or run (higher-order ops, autocast regions)
            raise FxlensError(
                f"graph {k} (saved as {cap / f'graph_{k}.py'}) cannot be re-traced for reduction: "
                f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            ) from None
        # auto with no failure seen in the script's own run: accuracy mode also catches crashes
        kind = (failed or {}).get("kind", "accuracy")
        chk = kind if check == "auto" else check
        base = ReproSpec(
            backend=meta["backend"],
            check=chk,
            config_lines=tuple(ln for ln in meta["config"] if ln not in baseline),
            env=_carried_env(),
            dynamic=bool(meta.get("dynamic")),
            reference=reference_backend(session / "children" / "capture", meta["backend"]),
        )
        t_confirm = time.perf_counter()
        spec, sig, flaky, seen = _confirm(pool, cand, base, values_path, (failed or {}).get("signature"))
        # a candidate may take as long as the whole graph did (slow compilers on a busy machine);
        # not when the failure is a hang: the confirm then took the timeout itself
        if sig != "timeout":  # pool.TIMEOUT_SIGNATURE (imported lazily: pool imports this package)
            pool.timeout = max(pool.timeout, 5 * (time.perf_counter() - t_confirm))
        if spec is not None:
            found = (k, meta, cand, spec, sig)
            break
    if found is None and failed is None:  # the script failed, but no compiled graph does
        raise _no_failure_error(
            script, script_args, session, exit_code, stderr_text, graphs, backend_desc, check
        )
    if found is None:
        child_sig = (failed or {}).get("signature") or _last_error_line(stderr_text)
        raise FxlensError(
            f"{script}: graph {todo[0]} fails in the script ({child_sig}) but not when compiled "
            f"alone with {meta['backend']} (isolated: {seen[0] or 'passes'})"
        )
    k, meta, cand, spec, sig = found
    if check == "auto" and not sig.startswith("AccuracyError"):
        spec = replace(spec, check="crash")  # an exception: crash mode gives the same signature
    spec = replace(spec, signature=sig)
    timings["confirm"] = round(time.perf_counter() - t0 - sum(timings.values()), 2)
    dynamo_nodes, aot_note = cand.num_calls, None
    if spec.backward:  # the failure needs backward: find the ATen graph it lives in
        cand, spec, aot_note = _aot_level(pool, cand, spec, session)
        timings["aot_capture"] = round(time.perf_counter() - t0 - sum(timings.values()), 2)
    original = cand.num_calls
    # the reproducer's re-runs fork from this one: it imports torch while the reduction runs
    zygote = None if cfg.fresh_reruns else Zygote(_preload(spec))
    if zygote is not None:
        closers.append(zygote.close)
    bar = ProgressBar(original=original) if progress else None
    # a flaky failure: a candidate that passes is tried again before it counts as passing
    retries = FLAKY_RETRIES if flaky else 0
    reducer = Reducer(pool.evaluate, lambda c: render(c, spec), sig, pool.size, bar, retries=retries)
    interrupted = 0  # the exit status an interrupt asks for: 130 (Ctrl-C) or 143 (SIGTERM)
    try:
        final = reduce(reducer, cand)
    except KeyboardInterrupt as e:
        interrupted = 143 if isinstance(e, children.Terminated) else 130
        final = reducer.best or cand
    if bar:
        bar.done()
    pool.close()
    # every distinct candidate's signature, for a look at what the reduction saw
    (session / "queries.json").write_text(json.dumps(reducer.memo, indent=1))

    timings["reduce"] = round(time.perf_counter() - t0 - sum(timings.values()), 2)
    result = _write(script, script_args, session, cfg, spec, cand, final, reducer, out, interrupted, zygote)
    result.update(
        check=spec.check,
        signature=sig,
        original_nodes=original,
        final_nodes=final.num_calls,
        queries=reducer.queries,
        seconds=round(time.perf_counter() - t0, 2),
        backend=spec.backend,
        graph=k,
        graphs=len(graphs),
        session=str(session),
        backward=spec.backward or spec.level == "backward",
        # the graph reduced: Dynamo's, run forward (and backward when only that fails) by the
        # backend; or the AOTAutograd forward/backward graph, compiled by its inner compiler
        level=spec.level_name,
        aot_graph=None if spec.level == "dynamo" else spec.level,
        dynamo_nodes=dynamo_nodes,
        dynamic=spec.dynamic,
        flaky_in_reduction=flaky,
        retries=reducer.retried,
        values_saved=spec.values_path is not None,
        original_input_bytes=cand.input_bytes,
        final_input_bytes=final.input_bytes,
        interrupted=bool(interrupted),
        interrupted_exit=interrupted,
    )
    if aot_note:
        result["aot_note"] = aot_note
    timings["write_and_verify"] = round(time.perf_counter() - t0 - sum(timings.values()), 2)
    timings["of_which_verify"] = result.pop("verify_seconds")
    # when the last worker had imported torch and warmed Dynamo up (seconds after the pool started)
    timings["workers_warm_at"] = pool.warm_at()
    result["timings"] = timings
    result["summary"] = summary_line(result)
    append_event(session, "minify", result)
    if json_path:
        write_json(result, json_path)
    return result


def _preload(spec) -> list[str]:
    """Modules the reproducer's backend compiles with (imported ahead by the zygote)."""
    mods = ["torch._dynamo"]
    if "inductor" in (spec.backend, spec.inner):
        mods.append("torch._inductor.compile_fx")
    if spec.backend in ("fxlens", "fxlens_nofusion"):
        mods.append("fxlens.backend.compile_fx")
    return mods


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


def _restore(value, spec):
    """A recorded value as the graph saw it (saved detached: requires_grad comes from the meta)."""
    if value is None:
        return spec.scalar
    if spec.requires_grad and (value.is_floating_point() or value.is_complex()):
        value.requires_grad_(True)
    return value


def _load_values(path: Path) -> dict:
    import torch

    return torch.load(path, weights_only=True)


def _write(script, script_args, session, cfg, spec, cand, final, reducer, out, interrupted, zygote) -> dict:
    """Verify the reproducer in fresh interpreters (in the session), then copy it to its place."""
    from fxlens.minify.repro_writer import default_name, fresh_path, header, render, verify

    target = fresh_path(out or (cfg.repro_dir / default_name(script, spec.backend, spec.check)))
    if interrupted:  # never under a name that looks finished (nor at --out): NAME.partial.py
        target = fresh_path(target.with_name(target.stem + ".partial.py"))
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
    target.parent.mkdir(parents=True, exist_ok=True)
    _copy_atomic(staged, target)
    if spec.values_path:
        shutil.copyfile(work / target.with_suffix(".pt").name, fresh_path(target.with_suffix(".pt")))
    return {
        "repro": str(target),
        "reproduced": f"{ok}/{0 if interrupted else cfg.reruns}",
        "flaky": 0 < ok < cfg.reruns,
        "verify_seconds": verify_s,
    }


def _copy_atomic(src: Path, dest: Path) -> None:
    """Copy via a temporary name and a rename: an interrupt or a full disk never leaves half a
    reproducer under its real name."""
    tmp = dest.with_name(f".{dest.name}.tmp")
    try:
        shutil.copyfile(src, tmp)
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)


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


def main(args: argparse.Namespace) -> int:
    out, out_dir = args.out, None
    if out and (out.endswith(os.sep) or os.path.isdir(out)):  # a folder: a fresh name inside it
        out, out_dir = None, out
    result = minify_script(
        args.script,
        args.script_args,
        args.backend,
        args.check,
        out,
        out_dir=out_dir,
        json_path=args.json,
        progress=True,
        timeout=config.run_timeout(args.timeout),
    )
    print(f"fxlens minify: {result['summary']}")
    print(f"  python {result['repro']}")
    if args.format != "text":
        from fxlens.report.verdicts import minify_blocks, render

        write_formatted(render(minify_blocks(result, args.script), args.format, "fxlens minify"), args.report)
    if result["interrupted"]:  # the best so far was written as NAME.partial.py
        return result["interrupted_exit"]
    if result["reproduced"].startswith("0/"):
        return 1
    return 0
