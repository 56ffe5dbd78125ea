"""The wrapper backend `fxlens bisect` injects into each child run (`fxlens.bisect.backend:wrapper`).

The runner's FXLENS_BACKEND_OVERRIDE makes every `torch.compile` call in the user's script use
`wrapper`. For each Dynamo graph, in order of compilation (its *ordinal*), the wrapper compiles the
graph with the stage under test (FXLENS_BISECT_STAGE) when the ordinal is selected by
FXLENS_BISECT_GRAPHS, else with the known-good stage before it (FXLENS_BISECT_GOOD). It records
into the run's session, as `bisect_graph` events: every graph's compile id and stage, any error at
compile or run time, and (check accuracy/auto) how far the first calls' outputs and gradients are
from an fp64 eager run of the same graph on the same inputs. Errors are re-raised unchanged: the
script fails exactly as it would without fxlens.
"""

from __future__ import annotations

import copy
import itertools
import json
import os
import sys
import time
from pathlib import Path

from fxlens import config
from fxlens.bisect.compiling import compile_stage
from fxlens.capture.imports import when_imported
from fxlens.trace.session import EVENTS_FILE, append_event

# where this process's time went before its first compile (`fxlens.bisect.runs.Outcome.times`):
# the runner imports this module before the script runs; torch comes with the script's imports.
# A run forked from a warm process (`fxlens.bisect.forked_runs`) resets it with `mark_forked`
_PROCESS: dict = {"pid": os.getpid(), "runner_at": time.time(), "torch_at": None, "forked": False}


def _torch_imported(_module) -> None:
    _PROCESS["torch_at"] = _PROCESS["torch_at"] or time.time()


when_imported("torch", _torch_imported)


def mark_forked() -> None:
    """In a run forked from a process that imported torch already: it starts now, with no imports."""
    now = time.time()
    _PROCESS.update(pid=os.getpid(), runner_at=now, torch_at=now, forked=True)


def process_times() -> dict | None:
    """This process's start as the run's first graph event carries it (once per process)."""
    if _PROCESS.get("said") == os.getpid():
        return None
    _PROCESS["said"] = os.getpid()
    return {k: _PROCESS[k] for k in ("runner_at", "torch_at", "forked")}


def under_bisector() -> None:
    """Set up a process driven by torch's CompilerBisector (TORCH_BISECT_BACKEND set): at this
    module's import, and again by a driver forked from a process that imported it without that
    switch (`fxlens.bisect.inductor._prepare`), whose steps would otherwise compile with inductor
    instead of this wrapper."""
    if not os.environ.get("TORCH_BISECT_BACKEND"):
        return
    # torch.compile would otherwise replace every backend, this wrapper included, with the
    # bisected one (torch/__init__.py, `compile`)
    from fxlens.backend.torch_compat import keep_custom_backend_under_bisector

    keep_custom_backend_under_bisector()
    if os.environ.get(config.ENV_BISECT_STATE_DIR):
        # the handover's state dir, outside this step's own (clean) inductor cache dir, where
        # torch would otherwise look for it (`fxlens.bisect.inductor`)
        from fxlens.backend.torch_compat import CompilerBisector

        CompilerBisector.in_process_cache = os.environ[config.ENV_BISECT_STATE_DIR]


under_bisector()

SPEC = "fxlens.bisect.backend:wrapper"  # how the parent names this backend in FXLENS_BACKEND_OVERRIDE
_ordinals = itertools.count()
_backends: dict[str, object] = {}


def selected(spec: str, ordinal: int) -> bool:
    """Whether graph `ordinal` is in FXLENS_BISECT_GRAPHS ("all", "3", "2-5", "1,4")."""
    if spec in ("", "all"):
        return True
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        if lo.strip() and int(lo) <= ordinal <= int(hi or lo):
            return True
    return False


def asked_backend(session_dir: str) -> str:
    """The backend the script's latest torch.compile call asked for (the runner records it)."""
    path = Path(session_dir) / EVENTS_FILE if session_dir else None
    asked = "inductor"
    if path and path.exists():
        for line in path.read_text(errors="replace").splitlines():
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            # the runner also records the decorator form's inner torch.compile call, which
            # already carries the override (this wrapper): skip it
            if ev.get("event") == "compile_call" and ev.get("backend") not in (None, "", SPEC):
                asked = ev["backend"]
    return asked


def lookup(spec: str):
    """The backend callable for a spec (a registered name, `module:attr` or `file.py:attr`)."""
    if spec in _backends:
        return _backends[spec]
    from fxlens.backend.torch_compat import lookup_backend
    from fxlens.capture.backends import resolve

    target, _, attr = spec.rpartition(":")
    main = sys.modules.get("__main__")
    # a backend defined in the running script: take the object itself, never re-run the script
    if target.endswith(".py") and main is not None and hasattr(main, attr):
        main_file = getattr(main, "__file__", "") or ""
        if os.path.abspath(main_file) == os.path.abspath(target):
            _backends[spec] = getattr(main, attr)
            return _backends[spec]
    backend = resolve(spec)
    fn = lookup_backend(backend) if isinstance(backend, str) else backend
    _backends[spec] = fn
    return fn


def _error(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}".strip().rstrip(":")[:500]


def _compile_id() -> str:
    try:
        from fxlens.backend.torch_compat import CompileContext

        cid = CompileContext.current_compile_id()
        return f"{cid.frame_id}/{cid.frame_compile_id}" if cid is not None else "?"
    except Exception:  # an older torch without the API: the ordinal still identifies the graph
        return "?"


def for_asked(asked: str, backend=None):
    """The wrapper for the torch.compile calls that passed one backend of the script (`backend`,
    described as `asked`); the runner calls this once per such backend (see
    `fxlens.capture.runner.SiteBackends`). Keyword arguments torch passes a callable backend (the
    call's `mode` and `options`) reach inductor as torch.compile would apply them."""
    own = None if isinstance(backend, str) or backend is None else backend

    def wrapper_for_call(gm, example_inputs, **options):
        return wrapper(gm, example_inputs, asked=asked, own=own, options=options)

    return wrapper_for_call


def wrapper(gm, example_inputs, asked: str | None = None, own=None, options: dict | None = None):
    """Dynamo backend: compile with the stage under test or the good stage, and record what happens."""
    cfg = config.load()
    bcfg = config.load_bisect()
    ordinal = next(_ordinals)
    if bcfg.stage == "@asked":
        stage = asked or asked_backend(cfg.session_dir)
    else:
        stage = bcfg.stage
    good = bcfg.good or stage
    use = stage if selected(bcfg.graphs, ordinal) else good
    cid = _compile_id()
    base = {"ordinal": ordinal, "compile_id": cid, "stage": use, "under_test": use == stage, "asked": asked}

    def record(phase: str, **data) -> None:
        if cfg.session_dir:
            if (proc := process_times()) is not None:
                data["process"] = proc
            append_event(cfg.session_dir, "bisect_graph", {**base, "phase": phase, **data})

    checking = bcfg.check in ("accuracy", "auto") and (use == stage or not bcfg.check_tested_only)
    random_ops, reference, eager_gm = _eager_copies(gm, checking)
    # the stage the call asked for is the script's own backend object, not one resolved again
    backend = own if own is not None and use == asked else None
    compiled = _compile_recorded(use, gm, example_inputs, record, random_ops, backend, options or {})
    return _checked_calls(compiled, use, reference, eager_gm, bcfg.check_calls, record)


def _eager_copies(gm, checking: bool):
    """(random_ops, the fp64 reference copy or None, the graph eager runs), all taken before the
    backend sees the graph: backends may rewrite it in place (torch's relu_*_TESTING_ONLY do)."""
    from fxlens.bisect.fp64_compare import has_random_ops

    random_ops = checking and has_random_ops(gm)
    reference = copy.deepcopy(gm) if checking and not random_ops else None
    from fxlens.bisect.eager_call import pristine

    # what eager does on a call decides whether the compiled call was right, raising included
    eager_gm = reference if reference is not None else pristine(gm)
    return random_ops, reference, eager_gm


def _compile_recorded(use: str, gm, example_inputs, record, random_ops: bool, backend, options: dict):
    """The graph compiled by stage `use` (`backend`, or the one `use` names); the compile (its
    time, or its error) is recorded."""
    from fxlens.errors import FxlensError

    try:
        backend = backend if backend is not None else lookup(use)
    except FxlensError as e:  # a bad --backend: the parent stops with this one line
        record("compile", ok=False, error=str(e), refused=True)
        raise
    t0 = time.perf_counter()
    try:
        compiled = compile_stage(backend, use, gm, example_inputs, options)
    except Exception as e:
        record("compile", ok=False, error=_error(e), seconds=round(time.perf_counter() - t0, 3))
        raise
    # where a run's time goes: the backend's compile, the checks, the rest (`fxlens.bisect.runs`)
    record("compile", ok=True, random_ops=random_ops, seconds=round(time.perf_counter() - t0, 3))
    return compiled


def _checked_calls(compiled, use: str, reference, eager_gm, check_calls: int, record):
    """The callable Dynamo runs in place of the graph: the compiled graph, its first `check_calls`
    calls checked against eager (and fp64), every failure recorded once."""
    from fxlens.bisect.eager_call import compare_raise, eager_raises

    state = {"calls": 0, "failed": False, "as_eager": False}

    def run(*args):
        state["calls"] += 1
        call = state["calls"]
        refs = eager_exc = None
        eager_known = call <= check_calls
        t_check = time.perf_counter()
        if eager_known:
            refs, eager_exc = _before_call(reference, eager_gm, args, call, record)
        check_s = time.perf_counter() - t_check
        try:
            result = compiled(*args)
        except Exception as e:
            if not eager_known:  # an unchecked call: ask eager now, on the inputs as they are
                eager_exc = _eager_raises(eager_raises, eager_gm, args)
            _record_raise(state, record, call, e, eager_exc, use)
            raise
        if eager_exc is not None:  # eager raised, the compiled call returned a value
            if not state["failed"]:
                state["failed"] = True
                mismatch = compare_raise(eager_exc, None, use)
                record("run", ok=False, call=call, no_raise=True, error=mismatch, mismatch=mismatch)
            return result
        if refs is not None:
            t_probe = time.perf_counter()
            # the probe runs after the user's call, never before: torch runs some checks only on a
            # graph's first call (AOTAutograd's custom-op aliasing analysis), and that call must
            # be the user's, with its exception the user's to see
            probe = _probe(compiled, refs)
            check_s += time.perf_counter() - t_probe
            _compare(args, result, refs, probe, call, record, reference, check_s)
            _watch_backward(result, call, record)
        return result

    return run


def _watch_backward(result, call: int, record) -> None:
    """Record ("backward") when the script's own backward first reaches this call's outputs.

    Gradients are a graph's behaviour only for a script that differentiates through it: a
    forward-only script (inference with parameters that require grad) is judged on its outputs,
    and `fxlens.bisect.runs` counts a gradient divergence only for a graph with this record. The
    hook is a prehook on the outputs' autograd nodes, so the user's tensors are not touched.
    """
    from fxlens.bisect.fp64_compare import flat_tensors

    nodes = {}
    for t in flat_tensors(result):
        if t.grad_fn is not None:
            nodes.setdefault(id(t.grad_fn), t.grad_fn)
    if not nodes:
        return
    said = []

    def reached(_grad_outputs):
        if not said:
            said.append(True)
            try:
                record("backward", call=call)
            except OSError:  # a full disk: the record is lost, the user's backward goes on
                pass

    for node in nodes.values():
        try:
            node.register_prehook(reached)
        except Exception:  # a node type without prehooks: its gradients are simply not judged
            continue


def _before_call(reference, eager_gm, args, call: int, record):
    """(refs, eager's exception) of one checked call, computed before the compiled call."""
    from fxlens.bisect.eager_call import eager_raises, exception_line

    refs = None
    if reference is not None:
        refs, eager_exc = _references(reference, args, record)
    else:
        eager_exc = _eager_raises(eager_raises, eager_gm, args)
    if eager_exc is not None:
        # recorded before the compiled call: if that call aborts the process, the run
        # still knows what eager did on it
        record("eager", call=call, raised=exception_line(eager_exc))
    return refs, eager_exc


def _record_raise(state: dict, record, call: int, e: Exception, eager_exc, use: str) -> None:
    """Record a compiled call that raised: right when eager raises the same (recorded once), else
    the graph's first failure (recorded once)."""
    from fxlens.bisect.eager_call import compare_raise, exception_line

    mismatch = compare_raise(eager_exc, e, use)
    if mismatch is None:  # raised exactly what eager raises: right, whatever the script does next
        if not state["as_eager"]:
            state["as_eager"] = True
            record("run", ok=True, call=call, as_eager=exception_line(e))
    elif not state["failed"]:
        state["failed"] = True
        eager = f"raises {exception_line(eager_exc)}" if eager_exc is not None else "returns a value"
        record("run", ok=False, call=call, error=_error(e), eager=eager, mismatch=mismatch)


def _eager_raises(eager_raises, gm, args):
    try:
        return eager_raises(gm, args)
    except Exception:  # copying the inputs failed: what eager does stays unknown
        return None


wrapper.for_asked = for_asked


def _references(reference, args, record):
    """(the eager/fp64 references of one call, eager's exception): (refs, None) normally,
    (None, exception) when eager raises on the call, (None, None) (recorded) when the graph runs
    eagerly but not in fp64."""
    from fxlens.bisect.fp64_compare import EagerRaised, references

    try:
        return references(reference, list(args)), None
    except EagerRaised as e:
        return None, e.error
    except Exception as e:  # a reference we can't compute is no verdict on the backend
        record("check", ok=True, skipped=f"reference failed: {_error(e)}")
        return None, None


def _probe(compiled, refs):
    """The compiled graph called once more, on the references' untouched copy of the inputs.

    Its gradients are this graph's alone: the user's real inputs may be outputs of an earlier
    graph, whose autograd history would add other graphs' gradients to the compiled side only.
    It runs after the user's call (so the user's is the graph's first), under a forked RNG state,
    on copies taken before that call, so the user's run is unchanged. None when gradients are not
    compared (grad mode off, no input requires grad) or when it raises.
    """
    import torch

    if not torch.is_grad_enabled() or not any(
        isinstance(a, torch.Tensor) and a.requires_grad for a in refs.probe_args
    ):
        return None
    try:
        with torch.random.fork_rng(devices=[]):
            return compiled(*refs.probe_args)
    except Exception:
        return None


def _compare(args, result, refs, probe, call: int, record, gm=None, before_s: float = 0.0) -> None:
    from dataclasses import replace

    from fxlens.bisect.fp64_compare import compare_result, output_ops

    t0 = time.perf_counter()
    try:
        divs = compare_result(list(args), result, refs, check_grads=False)
        ops = output_ops(gm) if gm is not None else []
        # name the op behind each output: "the script's tolerance is tighter than fp16 allows at <op>"
        divs = [replace(d, op=ops[i]) if i < len(ops) else d for i, d in enumerate(divs)]
        if probe is not None:
            grads = compare_result(refs.probe_args, probe, refs, check_grads=True)
            divs += [d for d in grads if d.what.startswith("grad")]
    except Exception as e:
        record("check", ok=True, call=call, skipped=f"comparison failed: {_error(e)}")
        return
    bad = [d for d in divs if not d.ok]
    rule = _minify_rule(refs, result)
    semantics = None
    if any(d.vs_eager > 0 and not d.what.startswith("grad") for d in divs):
        # eager and compiled differ: by rounding, or by what they compute (a scalar eager rounds)
        try:
            from fxlens.bisect.semantics import scalar_semantics

            semantics = scalar_semantics(gm, refs, result)
        except Exception:  # noqa: BLE001 - a finer word on a difference, never a verdict
            semantics = None
    record(
        "check",
        ok=not bad,
        call=call,
        divergences=[d.__dict__ for d in (bad or divs)[:8]],
        minify_rule=rule,
        semantics=semantics,
        # the references and probe before the call, and this comparison
        seconds=round(before_s + time.perf_counter() - t0, 3),
    )


def _minify_rule(refs, result) -> str | None:
    """What `fxlens minify --check accuracy` says of these outputs (its rule, torch's `same()` with
    a scaled floor, is stricter on tiny values than the per-dtype tolerances here): None when it
    passes them, so bisect only points at that check when it will find something. The rule is
    `fxlens.capture.accuracy`'s, the copy of minify's that bisect may import."""
    try:
        from fxlens.capture.accuracy import accuracy_failure

        return accuracy_failure(refs.out64, refs.out, result)
    except Exception as e:
        return f"not known: {_error(e)}"
