"""The re-run's side of `fxlens fix`: apply the fixes asked for, and record what compiled calls return.

`fxlens.capture.runner` calls `runner_hook()` (FXLENS_RUNNER_HOOK) before the script starts:
- `config` fixes are set on `torch._dynamo.config` here, before the script runs;
- `hook` fixes go on fxlens's one torch.compile hook (fxlens.capture.compile_hook): they change
  what the script's own torch.compile call compiles, or wrap what it returns;
- every object the script's torch.compile calls return is wrapped by the recorder, which keeps the
  tensors of the first calls' outputs (CPU copies) and counts every call; saved at exit with
  `torch.save` of plain tensors (read back with `weights_only=True`).

With FXLENS_DOCTOR_PROBE set (`fxlens fix --speed`), doctor's timing probe is installed too, after
the fixes, so it times the object the script really gets.
"""

from __future__ import annotations

import atexit
import functools
import inspect
import json
import os
import re
import sys

from fxlens import config
from fxlens.capture.compile_hook import observe
from fxlens.trace.session import append_event
from fxlens.trace.userframes import is_user_file

# outputs kept per compiled object: the first calls (a training loop's outputs drift apart with
# every step of a changed numerics, so the first ones say the most), and at most this many bytes
MAX_CALLS = 8
MAX_BYTES = 64 << 20
# a positional argument as torch names it in a guard of a module call (`args[0]`)
_POSITIONAL = re.compile(r"args\[(\d+)\]")
# the `hook` fixes (fxlens.report.fixes) the compile hook below applies, each by name in _fix_wrap
HOOK_KINDS = (
    "dynamic",
    "dynamic_default",
    "mark_dynamic",
    "mark_unbacked",
    "compile_in_place",
    "compile_inside_ddp",
    "regional",
)
# the random seed of every run (the script's own seeding, if any, comes after and wins)
SEED = 0


def _importable(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


class _Recorder:
    def __init__(self, path: str):
        self.path = path
        self.outputs: dict[str, list] = {}
        self.calls: dict[str, int] = {}
        self.info: dict[str, dict] = {}
        self.sites: dict[tuple, int] = {}
        self.bytes = 0

    def key(self, frame) -> str:
        file, line = (frame.f_code.co_filename, frame.f_lineno) if frame else ("?", 0)
        n = self.sites.get((file, line), 0)
        self.sites[(file, line)] = n + 1
        return f"{file}:{line}:{n}"

    def keep(self, key: str, out) -> None:
        import torch

        self.calls[key] = self.calls.get(key, 0) + 1
        kept = self.outputs.setdefault(key, [])
        if len(kept) >= MAX_CALLS or self.bytes > MAX_BYTES:
            return
        tensors = [t.detach().to("cpu", copy=True) for t in _leaves(out) if isinstance(t, torch.Tensor)]
        self.bytes += sum(t.numel() * t.element_size() for t in tensors)
        kept.append(tensors)

    def save(self) -> None:
        import torch

        try:
            torch.save({"outputs": self.outputs, "calls": self.calls}, self.path)
        except Exception as e:  # noqa: BLE001 - never change the script's exit for a record
            print(f"fxlens fix: could not save the compiled outputs: {e}", file=sys.stderr)


def _leaves(out, depth: int = 0):
    """The tensors of a result: tensors, tuples, lists, dicts (HF ModelOutput is a dict), in order."""
    if depth > 4:
        return
    if isinstance(out, dict):
        for v in out.values():
            yield from _leaves(v, depth + 1)
    elif isinstance(out, (tuple, list)):
        for v in out:
            yield from _leaves(v, depth + 1)
    else:
        yield out


def _user_frame(frame):
    """The innermost user frame at or above torch.compile's caller (`model.compile()` is torch's)."""
    while frame is not None and not is_user_file(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


def _code_of(obj):
    """The code object torch compiles for OBJ: a module's forward, a function's own code."""
    import torch

    target = getattr(obj, "__self__", None)
    if isinstance(target, torch.nn.Module):
        obj = target
    if isinstance(obj, torch.nn.Module):
        inner = getattr(obj, "module", obj) if _is_ddp(obj) else obj
        fwd = getattr(type(inner), "forward", None)
        return getattr(fwd, "__code__", None), inner
    fn = getattr(obj, "__func__", obj)
    return getattr(fn, "__code__", None), obj


def _is_ddp(obj) -> bool:
    return any(
        c.__name__ in ("DistributedDataParallel", "FullyShardedDataParallel") for c in type(obj).__mro__
    )


def _matches(params: dict, code) -> bool:
    """Whether a compiled object's code is the frame an action names (function + file)."""
    if not params.get("function"):
        return True
    if code is None:
        return False
    same_file = not params.get("file") or os.path.realpath(params["file"]) == os.path.realpath(
        code.co_filename
    )
    return code.co_name == params["function"] and same_file


def _site(frame) -> str:
    return f"{frame.f_code.co_filename}:{frame.f_lineno}" if frame else ""


def _at(params: dict, frame) -> bool:
    """Whether torch.compile was called at the site an action names (any site when unnamed)."""
    site = params.get("site_key")
    return not site or site == _site(frame)


def _premark(fn, sig, arg: str, dim: int, unbacked: bool, applied: list):
    """Wrap a compiled callable: mark `arg`'s dim dynamic (or unbacked) before every call."""
    import torch

    mark = torch._dynamo.decorators.mark_unbacked if unbacked else torch._dynamo.mark_dynamic

    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            bound = sig.bind_partial(*args, **kwargs).arguments if sig is not None else {}
        except TypeError:
            bound = {}
        m = _POSITIONAL.fullmatch(arg)
        if m:  # `args[0]`: the call's own positional argument (a module call's *args)
            i = int(m.group(1))
            t = args[i] if i < len(args) else None
        else:
            t = bound.get(arg, kwargs.get(arg))
        if isinstance(t, torch.Tensor) and t.dim() > dim:
            mark(t, dim)
            if not applied:
                applied.append(True)
        return fn(*args, **kwargs)

    return call


def _mark(compiled, inner, params: dict, unbacked: bool, flag: list):
    """`compiled` with ARG marked dynamic (or unbacked) before each call; unchanged when ARG is not
    an argument of the compiled function (the user does not hold that tensor)."""
    try:
        sig = inspect.signature(getattr(inner, "forward", inner))
    except (TypeError, ValueError):
        sig = None
    arg, dim = params["arg"], int(params["dim"])
    if sig is not None and arg not in sig.parameters and not _POSITIONAL.fullmatch(arg):
        return compiled
    if hasattr(compiled, "_orig_mod") and hasattr(compiled, "forward"):  # an OptimizedModule
        compiled.forward = _premark(compiled.forward, sig, arg, dim, unbacked, flag)
        return compiled
    return _premark(compiled, sig, arg, dim, unbacked, flag)


def _compile_in_place(module, real_compile, options: dict) -> None:
    """What `nn.Module.compile()` does, with the real torch.compile (the hook is already here)."""
    module._compiled_call_impl = real_compile(module._call_impl, **options)


def _fix_wrap(actions: list[dict], applied: dict, real_compile):
    """The compile hook's wrap that applies the hook fixes to the script's own torch.compile calls."""
    import torch

    def wrap(model, compiled, options: dict, frame):
        frame = _user_frame(frame)
        if frame is None:  # a compile fxlens or torch made, not the script's
            return compiled
        code, inner = _code_of(model)
        module = isinstance(model, torch.nn.Module)
        for i, act in enumerate(actions):
            kind, params = act["kind"], act.get("params") or {}
            if kind == "dynamic" and _matches(params, code) and _at(params, frame):
                compiled = real_compile(model, **{**options, "dynamic": True})
                applied[i] = True
            elif kind == "dynamic_default" and _matches(params, code) and _at(params, frame):
                compiled = real_compile(model, **{k: v for k, v in options.items() if k != "dynamic"})
                applied[i] = True
            elif kind in ("mark_dynamic", "mark_unbacked") and _matches(params, code):
                compiled = _mark(compiled, inner, params, kind == "mark_unbacked", applied.setdefault(i, []))
            elif kind == "compile_in_place" and _at(params, frame) and module:
                _compile_in_place(model, real_compile, options)
                compiled, applied[i] = model, True
            elif kind == "compile_inside_ddp" and _at(params, frame) and _is_ddp(model):
                # DDP(torch.compile(model)): DDP calls its `module`, so that is what gets compiled
                # (an in-place `model.compile()` is bypassed by DDP's call: nothing would compile)
                model.module = real_compile(model.module, **options)
                compiled, applied[i] = model, True
            elif kind == "regional" and _at(params, frame) and module:
                blocks = [m for m in model.modules() if type(m).__name__ == params["block"]]
                for b in blocks:
                    _compile_in_place(b, real_compile, options)
                if blocks:
                    compiled, applied[i] = model, len(blocks)
        return compiled

    return wrap


def _record_wrap(recorder: _Recorder):
    """The compile hook's last wrap: count and keep the outputs of every call of what the script got."""
    import torch

    def wrap(model, compiled, options: dict, frame):
        frame = _user_frame(frame)
        if frame is None or not callable(compiled):
            return compiled
        key = recorder.key(frame)
        recorder.info[key] = {"module": isinstance(model, torch.nn.Module), "ddp": _is_ddp(model)}
        if isinstance(compiled, torch.nn.Module):
            fwd = compiled.forward

            @functools.wraps(fwd)
            def forward(*args, **kwargs):
                out = fwd(*args, **kwargs)
                recorder.keep(key, out)
                return out

            compiled.forward = forward  # instance attribute: the module's __call__ path calls it
            return compiled

        @functools.wraps(compiled)
        def call(*args, **kwargs):
            out = compiled(*args, **kwargs)
            recorder.keep(key, out)
            return out

        return call

    return wrap


def _set_config(actions: list[dict], applied: dict) -> None:
    from fxlens.backend.torch_compat import dynamo_config

    for i, act in enumerate(actions):
        if act["kind"] == "config":
            name, value = act["params"]["name"], act["params"]["value"]
            if hasattr(dynamo_config, name):
                setattr(dynamo_config, name, value)
                applied[i] = True


def runner_hook(script: str, session: str):
    """FXLENS_RUNNER_HOOK of a `fxlens fix` re-run: apply the fixes in FXLENS_FIX, start the recorder."""
    import torch

    actions = json.loads(os.environ.get(config.ENV_FIX_ACTIONS) or "[]")
    applied: dict = {}
    # every run of `fxlens fix` starts from the same random state: a script that never seeds (random
    # weights, random inputs) then computes the same values in each, and outputs can be compared
    import random

    random.seed(SEED)
    torch.manual_seed(SEED)
    if "numpy" in sys.modules or _importable("numpy"):
        import numpy

        numpy.random.seed(SEED)
    _set_config(actions, applied)
    if os.environ.get(config.ENV_FIX_STANCE) == "eager":
        torch.compiler.set_stance("force_eager")  # the reference run: every compiled object runs eagerly
    real_compile = getattr(torch.compile, "__wrapped__", torch.compile)
    observe("fix", wrap=_fix_wrap(actions, applied, real_compile))
    after = None
    if config.load().doctor_probe:
        from fxlens.doctor.probe import runner_hook as doctor_hook

        after = doctor_hook(script, session)
    recorder = _Recorder(os.environ.get(config.ENV_FIX_OUTPUTS) or os.path.join(session, "outputs.pt"))
    observe("fix_outputs", wrap=_record_wrap(recorder))

    def at_exit() -> None:
        recorder.save()
        if session:
            done = {str(i): bool(v) if not isinstance(v, list) else bool(v) for i, v in applied.items()}
            append_event(
                session, "fix_child", {"applied": done, "calls": recorder.calls, "objects": recorder.info}
            )

    atexit.register(at_exit)
    return after
