"""Child side of `fxlens minify`: a capturing wrapper around the real backend, installed through the
runner's backend override (`fxlens.minify.capture:capture`).

For every Dynamo graph it saves the graph as code (`graph_K.py`, never a pickle), the meta of its
inputs (`graph_K.json`), and, for the first call, their values (`values_K.pt`, tensors only, read
back with weights_only=True); then it compiles and runs the graph with the real backend, noting in
`status.jsonl` (flushed before each step) which graph is being compiled or run, so even a segfault
names the graph it happened in. With an accuracy check, the first call of each graph is also
compared with an fp64 eager run.
"""

from __future__ import annotations

import copy
import json
import os
import sys
from pathlib import Path

from fxlens import config
from fxlens.backend.stages import stage
from fxlens.capture.accuracy import accuracy_failure
from fxlens.minify.candidate_check import signature_of
from fxlens.report.exits import TIMEOUT_EXIT

CAPTURE_SPEC = "fxlens.minify.capture:capture"
STATUS_FILE = "status.jsonl"
CONFIG_MODULES = ("torch._dynamo.config", "torch._inductor.config", "torch._functorch.config")

_counter = [0]


def _status(out: Path, **data) -> None:
    with open(out / STATUS_FILE, "a") as f:
        f.write(json.dumps(data, default=str) + "\n")
        f.flush()
        os.fsync(f.fileno())


def config_lines() -> list[str]:
    """Non-default torch._dynamo / _inductor / _functorch config, as assignment lines."""
    import importlib

    lines = []
    for name in CONFIG_MODULES:
        try:
            code = importlib.import_module(name).codegen_config()
        except Exception:  # a config module that cannot describe itself: carry nothing from it
            continue
        lines += [ln for ln in code.splitlines() if ln.startswith("torch.")]
    return lines


def baseline_config_lines() -> set[str]:
    """Config lines a plain compile shows with nothing set by a script (Dynamo patches some while
    it compiles); subtracted from a capture's lines so only the script's own settings are carried."""
    import torch

    seen: list[str] = []

    def probe(gm, example_inputs):
        seen.extend(config_lines())
        return gm

    torch.compile(lambda x: x + 1, backend=probe)(torch.ones(1))
    torch.compiler.reset()
    return set(seen)


def _script_backend_spec(session: str) -> str:
    """The backend the script asked for in its latest torch.compile call (the runner records it)."""
    from fxlens.trace.session import EVENTS_FILE, read_events

    calls = [e for e in read_events(Path(session) / EVENTS_FILE)[0] if e.get("event") == "compile_call"]
    return str(calls[-1]["backend"]) if calls else "inductor"


def _resolve_real(spec: str):
    target, _, attr = spec.rpartition(":")
    main = sys.modules.get("__main__")
    main_file = getattr(main, "__file__", None) or sys.argv[0]
    if target.endswith(".py") and os.path.abspath(target) == os.path.abspath(main_file):
        # a backend defined in the running script: take it from there instead of re-running it
        return getattr(main, attr)
    from fxlens.backend.torch_compat import lookup_backend
    from fxlens.capture.backends import resolve

    backend = resolve(spec)
    return lookup_backend(backend) if isinstance(backend, str) else backend


def _real_backend(spec: str, explicit: bool):
    """(backend object, spec a worker can resolve). A backend the script built (say
    `aot_autograd(...)` assigned to a global) may not resolve from its description: then find the
    object by that description among the script's globals and name it `script.py:global`."""
    from fxlens.errors import FxlensError

    try:
        return _resolve_real(spec), spec
    except FxlensError:
        if explicit:
            raise
    from fxlens.capture.backends import describe

    main = sys.modules.get("__main__")
    main_file = os.path.abspath(getattr(main, "__file__", None) or sys.argv[0])
    for name, obj in list(vars(main).items()):
        if callable(obj) and not name.startswith("_") and describe(obj, main_file) == spec:
            return obj, f"{main_file}:{name}"
    raise FxlensError(f"cannot find the script's backend {spec!r} again (pass --backend)")


def graph_source(gm) -> str:
    body = gm.code.strip("\n")
    return (
        "import torch\nfrom math import inf, nan  # noqa: F401\nfrom torch import device  # noqa: F401\n\n\n"
        "class CapturedGraph(torch.nn.Module):\n" + "\n".join("    " + ln for ln in body.splitlines()) + "\n"
    )


def lift_attributes(gm, example_inputs: list) -> list:
    """Turn get_attr nodes into inputs (the saved code must not depend on module state)."""
    import torch

    attrs = [n for n in gm.graph.nodes if n.op == "get_attr"]
    if not attrs:
        return example_inputs
    first = next(n for n in gm.graph.nodes if n.op != "placeholder")
    extra = []
    for n in attrs:
        value = gm
        for part in n.target.split("."):
            value = getattr(value, part)
        if not isinstance(value, torch.Tensor):
            continue
        with gm.graph.inserting_before(first):
            p = gm.graph.placeholder(f"lifted_{n.name}")
        n.replace_all_uses_with(p)
        gm.graph.erase_node(n)
        extra.append(value)
    gm.recompile()
    return [*example_inputs, *extra]


def for_asked(asked: str, backend=None):
    """The capturing backend for the torch.compile calls that passed one backend of the script
    (`backend`, described as `asked`); the runner calls it once per such backend, so calls that
    shared a backend share this one (`fxlens.capture.runner.SiteBackends`)."""
    own = None if isinstance(backend, str) or backend is None else backend

    def capture_for_call(gm, example_inputs, **options):
        return capture(gm, example_inputs, asked=asked, own=own, options=options)

    return capture_for_call


def capture(gm, example_inputs, asked: str | None = None, own=None, options: dict | None = None):
    """The capturing backend: record the graph, then compile and run it with the real backend."""
    out = Path(os.environ[config.ENV_MINIFY_CAPTURE_DIR])
    check = os.environ.get(config.ENV_MINIFY_CHECK, "auto")
    spec = (
        os.environ.get(config.ENV_MINIFY_BACKEND) or asked or _script_backend_spec(config.load().session_dir)
    )
    k = _counter[0]
    _counter[0] += 1
    saved, lifted, meta = _save_graph(out, k, gm, example_inputs, spec)
    # first: a failure to resolve or a segfault must not lose them
    meta["unsaved"] = _save_values(out, k, example_inputs, lifted)
    real, spec = _real_backend(spec, explicit=bool(os.environ.get(config.ENV_MINIFY_BACKEND)))
    if own is not None and spec == asked and not os.environ.get(config.ENV_MINIFY_BACKEND):
        real = own  # the script's own object compiles its graphs, as without fxlens
    meta["backend"] = spec
    (out / f"graph_{k}.json").write_text(json.dumps(meta, default=str))
    _status(out, graph=k, step="compile")
    try:
        compiled = _compile_as_asked(real, spec, gm, example_inputs, options or {})
    except Exception as e:
        _status(out, graph=k, step="failed", phase="compile", signature=signature_of(e), kind="crash")
        raise
    _status(out, graph=k, step="compiled")
    return _watched(compiled, out, k, saved, lifted, check)


def _compile_as_asked(real, spec: str, gm, example_inputs, options: dict):
    """`real(gm, example_inputs)`, with the call's `mode`/`options` as torch.compile would apply
    them: inductor's as config patches, a script's own backend as the keywords torch passes."""
    if not options:
        return real(gm, example_inputs)
    row = stage(spec)
    if row and row.options:
        from fxlens.backend.torch_compat import compile_fx, list_mode_options

        patches = dict(list_mode_options(options.get("mode"), None)) if options.get("mode") else {}
        patches.update(options.get("options") or {})
        patches.update(row.inductor_config)
        return compile_fx(gm, example_inputs, config_patches=patches)
    if ":" in spec:
        return real(gm, example_inputs, **options)
    return real(gm, example_inputs)  # a registered name (eager, aot_eager): torch passes none


def _save_graph(out: Path, k: int, gm, example_inputs, spec: str):
    """Graph k as code (attributes lifted to inputs) and its meta; (the copy saved, lifted, meta)."""
    import torch

    from fxlens.minify.autocast import autocast_state
    from fxlens.minify.fidelity import constants, graph_ops
    from fxlens.minify.graph import spec_of
    from fxlens.minify.regions import inline_regions

    saved = copy.deepcopy(gm)
    regions = inline_regions(saved)  # nested compile regions: their bodies, saved with the graph
    n_extra = len(example_inputs)
    # what the backend is given, before attributes are lifted: compared with the isolated graph
    seen = {"ops": graph_ops(gm.graph), "constants": constants(gm)}
    inputs = lift_attributes(saved, list(example_inputs))
    lifted = inputs[n_extra:]
    (out / f"graph_{k}.py").write_text(graph_source(saved))
    meta = {
        "graph": k,
        "backend": spec,
        "inputs": [spec_of(x).to_json() for x in inputs],
        "config": config_lines(),
        # dynamic=True (or a size marked dynamic): Dynamo passes symbolic sizes as SymInt inputs
        "dynamic": any(isinstance(x, torch.SymInt) for x in example_inputs),
        "autocast": autocast_state(),  # forwards of candidates and reproducer run under it
        "regions_inlined": regions,
        "num_calls": sum(
            1 for n in saved.graph.nodes if n.op in ("call_function", "call_method", "call_module")
        ),
        **seen,
    }
    (out / f"graph_{k}.json").write_text(json.dumps(meta, default=str))
    return saved, lifted, meta


def _save_values(out: Path, k: int, args, lifted: list) -> dict:
    """Graph k's tensor inputs (and lifted attributes) as `values_k.pt`, detached copies that
    `torch.load(weights_only=True)` reads back; {arg name: why it was not saved} for the others.

    A tensor subclass whose data is one plain tensor (`as_subclass`, a script's own class that
    no other process can import, so weights_only would refuse it) is saved as that plain tensor:
    the graph's ops on it are what the reproducer runs, as they run on random inputs. A wrapper
    subclass (DTensor, a subclass holding inner tensors) has no such data: not saved, with the
    reason; the reproducer draws random values for it.
    """
    import torch

    values, unsaved = {}, {}
    for i, a in enumerate([*args, *lifted]):
        if not isinstance(a, torch.Tensor):
            continue
        try:
            values[f"arg{i}"] = _savable(a.detach())
        except _Unsavable as e:
            unsaved[f"arg{i}"] = str(e)
    torch.save(values, out / f"values_{k}.pt")
    return unsaved


class _Unsavable(Exception):
    """Why one input's values cannot be saved for a weights_only load."""


def _savable(t):
    """A copy of `t` that torch.save writes and torch.load(weights_only=True) reads back."""
    import io

    import torch

    if type(t) in (torch.Tensor, torch.nn.Parameter):
        return t.clone()
    name = f"{type(t).__module__}.{type(t).__qualname__}"
    plain = None
    try:
        if not _is_wrapper_subclass(t):
            plain = t.as_subclass(torch.Tensor).clone()
    except Exception:  # noqa: BLE001 - no plain data to take: refused below with the reason
        plain = None
    if plain is None:
        raise _Unsavable(f"a tensor subclass {name} whose data is not one plain tensor (a wrapper subclass)")
    buffer = io.BytesIO()
    try:  # the round trip the reproducer makes (sparse, quantized and other layouts included)
        torch.save(plain, buffer)
        buffer.seek(0)
        torch.load(buffer, weights_only=True)
    except Exception as e:  # noqa: BLE001 - any refusal is a reason to give, never a crash
        raise _Unsavable(
            f"{name}: torch.load(weights_only=True) cannot read it back ({type(e).__name__})"
        ) from None
    return plain


def _is_wrapper_subclass(t) -> bool:
    """Whether `t` is a wrapper subclass (its storage is not its data: DTensor, NestedTensor, ...)."""
    from fxlens.backend.torch_compat import is_traceable_wrapper_subclass

    return bool(is_traceable_wrapper_subclass(t))


def _watched(compiled, out: Path, k: int, saved, lifted: list, check: str):
    """The compiled graph, its first call recorded: run, failed (with signature) or ran, and on
    accuracy checks compared with eager."""
    import torch

    from fxlens.minify.autocast import grad_references

    boxed = bool(getattr(compiled, "_boxed_call", False))
    state = {"first": True}

    def run(*args):
        # a boxed call passes one list (and the callee may clear it): copy it first
        call_args = list(args[0]) if boxed and len(args) == 1 and isinstance(args[0], list) else list(args)
        first = state["first"]
        state["first"] = False
        eager_sig = grad_refs = None
        if first:
            _status(out, graph=k, step="run")
            if check in ("accuracy", "auto", "eager-diff"):
                eager_in = [a.detach().clone() if isinstance(a, torch.Tensor) else a for a in call_args]
            if check in ("accuracy", "auto"):  # a backward-only bug shows in the gradients alone
                grad_refs = grad_references(saved, call_args, lifted)
            if check in ("auto", "raise"):
                eager_sig = _eager_raises(saved, call_args, lifted)
            if eager_sig is not None:
                # before the compiled call: an abort in it is known to be where eager raises
                _status(out, graph=k, step="run", eager_raises=eager_sig)
        try:
            result = compiled(*args)
        except Exception as e:
            sig = signature_of(e)
            if sig != eager_sig:  # raising exactly what eager raises is right
                _status(out, graph=k, step="failed", phase="run", signature=sig, kind="crash")
            raise
        if first:
            _status(out, graph=k, step="ran")
            if eager_sig is not None:
                no_raise = f"NoRaise: eager raises {eager_sig}, compiled returns a value"
                _status(out, graph=k, step="failed", phase="run", signature=no_raise, kind="raise")
            elif check == "eager-diff":
                _compare_eager(out, k, saved, eager_in, lifted, result)
            elif check in ("accuracy", "auto"):
                probe = (lambda xs: compiled(list(xs))) if boxed else (lambda xs: compiled(*xs))
                _compare(out, k, saved, eager_in, lifted, result, (probe, grad_refs))
        return result

    if boxed:
        run._boxed_call = True  # type: ignore[attr-defined]
    return run


capture.for_asked = for_asked


def _compare(out: Path, k: int, gm, args: list, lifted: list, result, grads=(None, None)) -> None:
    """Record an accuracy failure of graph k's first call (compiled vs eager vs fp64 eager): its
    outputs, then (`grads`: the compiled graph as a call, and `grad_references`) its inputs'
    gradients."""
    import torch

    from fxlens.minify.autocast import grad_failure

    def to64(x):
        return x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x

    try:
        with torch.no_grad():
            eager = gm(*args, *lifted)
            try:
                ref64 = gm(*[to64(a) for a in args], *[to64(a) for a in lifted])
            except Exception:
                ref64 = eager
        why = accuracy_failure(ref64, eager, result)
        if not why and grads[1] is not None:
            why = grad_failure(grads[0], grads[1])
    except Exception:  # comparing is best effort; the reduction re-checks in isolation
        return
    if why:
        _status(out, graph=k, step="failed", phase="run", signature=why, kind="accuracy")


def _eager_raises(gm, args: list, lifted: list) -> str | None:
    """The signature of what eager raises on copies of a call's inputs, or None when it returns."""
    import torch

    copies = [a.detach().clone() if isinstance(a, torch.Tensor) else a for a in args]
    try:
        with torch.no_grad(), torch.random.fork_rng(devices=[]):
            gm(*copies, *lifted)
    except Exception as e:
        return signature_of(e)
    return None


def _compare_eager(out: Path, k: int, gm, args: list, lifted: list, result) -> None:
    """Record an eager-diff failure of graph k's first call (compiled vs eager, assert_close)."""
    import torch

    from fxlens.minify.candidate_check import eager_diff_failure

    try:
        with torch.no_grad():
            eager = gm(*args, *lifted)
        why = eager_diff_failure(eager, result)
    except Exception:  # best effort, as _compare
        return
    if why:
        _status(out, graph=k, step="failed", phase="run", signature=why, kind="eager-diff")


def read_status(out: Path) -> list[dict]:
    """The status records of a capture run (a torn last line is skipped)."""
    path = out / STATUS_FILE
    if not path.exists():
        return []
    records = []
    for line in path.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            continue
    return records


def failing_graph(out: Path, exit_code: int) -> dict | None:
    """The first graph that failed in the capture run: {graph, phase, signature, kind}."""
    from fxlens.minify.repro_writer import signal_signature

    records = read_status(out)
    for r in records:
        if r.get("step") == "failed":
            return r
    if (exit_code < 0 or exit_code == TIMEOUT_EXIT) and records:
        # killed by a signal, or ended at --timeout (a hang): the graph whose compile or run had
        # started and not finished. "timeout" is also what a hung candidate's signature says
        last = records[-1]
        if last.get("step") in ("compile", "run"):
            return {
                "graph": last["graph"],
                "phase": last["step"],
                "signature": "timeout" if exit_code == TIMEOUT_EXIT else signal_signature(exit_code),
                # killed inside a call on which eager raises: reduce with eager raising kept
                "kind": "raise" if last.get("eager_raises") else "crash",
                "eager_raises": last.get("eager_raises"),
            }
    return None


def captured_graphs(out: Path) -> list[int]:
    return sorted(int(p.stem.split("_")[1]) for p in out.glob("graph_*.json"))
