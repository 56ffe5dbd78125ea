"""How each `hook` fix kind is applied in a `fxlens fix` re-run: one applier per kind, in a table.

The compile hook (fxlens.fix.child) calls, for every torch.compile call of the script and every
hook action asked for, `APPLIERS[kind](call, params)`. An applier changes what the script gets
(recompiled with other options, wrapped, compiled elsewhere) and says whether it applied:
- `applied(call, note)` once the change is made (or, for a mark before each call, once a call
  made the mark: `Marks`);
- nothing when the call is not what the action names, so another call may be.

An action names the compiled *code* (its `function` and the compiled frame's `code_files`, from
torch's trace), never the file of the line that called torch.compile: a module from a library
(torchvision's ResNet) is compiled at the user's line, but its code is the library's.
`START` holds the kinds applied once before the script starts (they need no torch.compile call).
"""

from __future__ import annotations

import functools
import inspect
import os
import re
import warnings
from dataclasses import dataclass, field

# a positional argument as torch names it in a guard of a module call (`args[0]`)
_POSITIONAL = re.compile(r"args\[(\d+)\]")


@dataclass
class Call:
    """One torch.compile call of the script, as the compile hook sees it."""

    model: object  # what the script passed
    compiled: object  # what the script will get (changed by appliers)
    options: dict  # torch.compile's keyword options
    site: str  # `file:line` of the user's call
    real_compile: object  # torch.compile itself (not fxlens's hook)
    code: object = None  # the code object torch compiles for `model`
    inner: object = None  # the module (inside DDP) or function whose code that is
    signature: object = None  # of the compiled callable (a module's forward, a bound method)
    notes: list = field(default_factory=list)

    @property
    def owner(self) -> str:
        """`Linear.forward`, `Agent.act`, `step`: how the report names the compiled code."""
        import torch

        if isinstance(self.inner, torch.nn.Module):
            return f"{type(self.inner).__name__}.forward"
        if inspect.ismethod(self.inner):
            return f"{type(self.inner.__self__).__name__}.{self.inner.__func__.__name__}"
        return getattr(self.inner, "__qualname__", "") or getattr(self.code, "co_name", "")


def code_of(obj):
    """(code, inner, signature) torch compiles for OBJ: a module's forward (inside DDP), a bound
    method's own function (not its module's forward), a function's code."""
    import torch

    obj = module_of(obj) or obj
    if inspect.ismethod(obj):
        fn = obj.__func__
        return getattr(fn, "__code__", None), obj, _signature(obj)
    if isinstance(obj, torch.nn.Module):
        inner = getattr(obj, "module", obj) if is_ddp(obj) else obj
        fwd = getattr(type(inner), "forward", None)
        return getattr(fwd, "__code__", None), inner, _signature(getattr(inner, "forward", None))
    fn = getattr(obj, "__func__", obj)
    return getattr(fn, "__code__", None), obj, _signature(obj)


def module_of(obj):
    """The module of an in-place `module.compile()` (torch compiles its bound `_call_impl`), else None."""
    import torch

    if inspect.ismethod(obj) and obj.__name__ == "_call_impl" and isinstance(obj.__self__, torch.nn.Module):
        return obj.__self__
    return obj if isinstance(obj, torch.nn.Module) else None


def _signature(fn):
    try:
        return inspect.signature(fn) if fn is not None else None
    except (TypeError, ValueError):
        return None


def is_ddp(obj) -> bool:
    return any(
        c.__name__ in ("DistributedDataParallel", "FullyShardedDataParallel") for c in type(obj).__mro__
    )


def _same_file(a: str, b: str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def matches(params: dict, code) -> bool:
    """Whether a compiled object's code is the frame an action names. `code_files` (the compiled
    frame's own files, from torch's trace) decide when known; else the user's `file`, or, for a
    library's code compiled at the user's line, the name alone."""
    if not params.get("function"):
        return True
    if code is None or code.co_name != params["function"]:
        return False
    if params.get("code_files"):
        return any(_same_file(f, code.co_filename) for f in params["code_files"])
    if not params.get("file") or _same_file(params["file"], code.co_filename):
        return True
    from fxlens.trace.userfiles import is_user_file

    return not is_user_file(code.co_filename)  # the report's file is the user's call line then


def names(params: dict, call: Call) -> bool:
    """Whether CALL compiles what the action names: its code (`function`, `code_files`), or, where
    torch compiled a wrapper of its own (`inner`, for a module in torch 2.13), the report's name of
    the compiled code (`owner`: `Linear.forward`)."""
    if params.get("function"):
        return matches(params, call.code)
    owner = params.get("owner")
    return not owner or owner == call.owner or owner.split(".")[-2:] == call.owner.split(".")[-2:]


def _at(call: Call, params: dict) -> bool:
    """Whether torch.compile was called at the site an action names (any site when unnamed)."""
    return not params.get("site_key") or params["site_key"] == call.site


class Marks(list):
    """The state of a mark made before each call: applied once a call made it."""


def _premark(fn, sig, arg: str, dim: int, mark, done: Marks):
    """FN wrapped: mark ARG's DIM (dynamic, maybe dynamic or unbacked) before every call."""
    import torch

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
            if not done:
                done.append(True)
        return fn(*args, **kwargs)

    return call


def _takes(sig, arg: str) -> bool:
    """Whether a callable of signature SIG receives ARG by name: a parameter of its own, or through
    its `**kwargs` (peft's PeftModel.forward(*args, **kwargs) passes input_ids on to the model)."""
    return arg in sig.parameters or any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())


def _mark_with(name: str):
    def apply(call: Call, params: dict):
        import torch

        if not names(params, call):
            return None
        arg, dim = params["arg"], int(params["dim"])
        sig = call.signature
        if sig is not None and not _takes(sig, arg) and not _POSITIONAL.fullmatch(arg):
            call.notes.append(f"`{arg}` is not an argument of the compiled `{call.code.co_name}`")
            return None
        mark = {
            "mark_dynamic": torch._dynamo.mark_dynamic,
            "maybe_mark_dynamic": torch._dynamo.maybe_mark_dynamic,
            "mark_unbacked": torch._dynamo.decorators.mark_unbacked,
        }[name]
        done = Marks()
        c = call.compiled
        if hasattr(c, "_orig_mod") and hasattr(c, "forward"):  # an OptimizedModule: its forward
            c.forward = _premark(c.forward, sig, arg, dim, mark, done)
        else:
            call.compiled = _premark(c, sig, arg, dim, mark, done)
        return done

    apply.__name__ = f"_{name}"
    return apply


def _mark_each(call: Call, params: dict):
    """mark_dynamic of several arguments that change size together, before each call (applied once
    a call marked the first)."""
    apply = _mark_with("mark_dynamic")
    marks = [apply(call, {**params, "arg": a, "dim": d}) for a, d in zip(params["args"], params["dims"])]
    return None if any(m is None for m in marks) else marks[0]


def _dynamic(call: Call, params: dict):
    if not (names(params, call) and _at(call, params)):
        return None
    call.compiled = call.real_compile(call.model, **{**call.options, "dynamic": True})
    return True


def _dynamic_default(call: Call, params: dict):
    if not (names(params, call) and _at(call, params)):
        return None
    call.compiled = call.real_compile(call.model, **{k: v for k, v in call.options.items() if k != "dynamic"})
    return True


def _module(call: Call):
    return module_of(call.model)


def _compile_in_place(call: Call, params: dict):
    module = _module(call)
    if module is None or not _at(call, params):
        return None
    # what `nn.Module.compile()` does, with the real torch.compile (the hook is already here)
    module._compiled_call_impl = call.real_compile(module._call_impl, **call.options)
    call.compiled = module
    return True


def _compile_methods(call: Call, params: dict):
    """`model.encode = torch.compile(model.encode)` for each method the script calls instead of
    forward (a VAE's encode/decode): the compiled wrapper of the module never runs them."""
    module = _module(call)
    if module is None or not _at(call, params):
        return None
    inner = getattr(module, "_orig_mod", module)
    done = [m for m in params.get("methods") or [] if callable(getattr(inner, m, None))]
    for m in done:
        setattr(inner, m, call.real_compile(getattr(inner, m), **call.options))
    return bool(done) or None


def _compile_inside_ddp(call: Call, params: dict):
    if not (_at(call, params) and is_ddp(call.model)):
        return None
    # DDP(torch.compile(model)): DDP calls its `module`, so that is what gets compiled (an in-place
    # `model.compile()` is bypassed by DDP's call: nothing would compile)
    call.model.module = call.real_compile(call.model.module, **call.options)
    call.compiled = call.model
    return True


def _regional(call: Call, params: dict):
    """Each instance of the block compiled, the model not: `block.forward = torch.compile(block.forward)`
    works in every torch this supports (in 2.13 `module.compile()` of a torch.nn layer whose parent
    calls it through a fast path compiles no frame); blocks of one class with different parameter
    shapes compile once per shape, which is said."""
    module = _module(call)
    if module is None or not _at(call, params):
        return None
    blocks = [m for m in module.modules() if type(m).__name__ == params["block"]]
    for b in blocks:
        b.forward = call.real_compile(b.forward, **call.options)
    if not blocks:
        call.notes.append(f"no `{params['block']}` inside the module compiled at {call.site}")
        return None
    call.compiled = module
    shapes = {tuple(tuple(p.shape) for p in b.parameters()) for b in blocks}
    if len(shapes) > 1:
        call.notes.append(
            f"the {len(blocks)} `{params['block']}` blocks have {len(shapes)} different parameter shapes: "
            "one compile per shape (recompiles expected)"
        )
    return len(blocks)


def _nested_region(call: Call, params: dict):
    """The block's class marked `torch.compiler.nested_compile_region` before the whole model's
    first call (torch compiles lazily): what the script gets stays the same compiled model."""
    import torch

    module = _module(call)
    if module is None or not _at(call, params):
        return None
    classes = {type(m) for m in module.modules() if type(m).__name__ == params["block"]}
    if not classes:
        call.notes.append(f"no `{params['block']}` inside the module compiled at {call.site}")
        return None
    for cls in classes:
        cls.forward = torch.compiler.nested_compile_region(cls.forward)
    return True


def _disable(call: Call, params: dict):
    """The function the action names (its file, name and first line) wrapped in
    `torch.compiler.disable` wherever a module or a class holds it (an import under another name
    too), before the script's first compiled call: Dynamo then skips it."""
    import sys

    import torch

    def named(v) -> bool:
        if not inspect.isfunction(v):
            return False
        code = v.__code__
        return (
            code.co_name == params["function"].split(".")[-1]
            and code.co_firstlineno == int(params["first_line"])
            and _same_file(code.co_filename, params["file"])
        )

    owners = [m for m in list(sys.modules.values()) if m is not None and hasattr(m, "__dict__")]
    with warnings.catch_warnings():  # a deprecated module attribute warns when merely looked at
        warnings.simplefilter("ignore")
        owners += [v for m in list(owners) for v in list(vars(m).values()) if isinstance(v, type)]
        return _wrap_each(owners, named, torch.compiler.disable)


def _wrap_each(owners: list, named, wrap) -> int | None:
    """Each function NAMED holds, in every owner (module, class), replaced by WRAP of it."""
    done, wrappers = 0, {}  # one wrapper per function: every name for it stays one object
    for owner in owners:
        for name, v in list(vars(owner).items()):
            fn = v.__func__ if isinstance(v, (staticmethod, classmethod)) else v
            if not named(fn):
                continue
            wrapped = wrappers[id(fn)] = wrappers.get(id(fn)) or wrap(fn)
            try:
                setattr(owner, name, type(v)(wrapped) if fn is not v else wrapped)
            except (AttributeError, TypeError):  # a read-only owner (a builtin type, a frozen module)
                continue
            done += 1
    return done or None


# hook kind -> applier; every `hook` row of fxlens.report.fixes.FIXES has one (a test checks both ways)
APPLIERS = {
    "mark_dynamic": _mark_with("mark_dynamic"),
    "maybe_mark_dynamic": _mark_with("maybe_mark_dynamic"),
    "mark_unbacked": _mark_with("mark_unbacked"),
    "mark_dynamic_together": _mark_each,
    "dynamic": _dynamic,
    "dynamic_default": _dynamic_default,
    "compile_in_place": _compile_in_place,
    "compile_methods": _compile_methods,
    "compile_inside_ddp": _compile_inside_ddp,
    "regional": _regional,
    "nested_region": _nested_region,
    "disable": _disable,
}


# ---- applied once, before the script starts ------------------------------------------------------


def _config_module(name: str):
    """(torch config module, attribute) of a config action's NAME: `x` is torch._dynamo.config.x;
    `inductor.x` / `functorch.x` / `dynamo.x` name the other configs."""
    from fxlens.backend.torch_compat import config_module

    where, _, attr = name.rpartition(".")
    return config_module(where or "dynamo"), attr


def set_config(params: dict) -> bool:
    mod, attr = _config_module(params["name"])
    if mod is None or not hasattr(mod, attr):
        return False
    setattr(mod, attr, params["value"])
    return True


def call_kwarg(params: dict) -> bool:
    """Every call of torch.nn's CLASS passes KWARG=VALUE unless the caller passed it (a caller-side
    switch that removes a library's break: nn.Transformer's `tgt_is_causal=True` with a causal mask)."""
    import torch

    cls = getattr(torch.nn, params["module_class"], None)
    if cls is None or params["kwarg"] not in inspect.signature(cls.forward).parameters:
        return False
    forward, kw, value = cls.forward, params["kwarg"], params["value"]

    @functools.wraps(forward)
    def patched(self, *args, **kwargs):
        if kwargs.get(kw) is None:  # nn.Transformer passes its own `tgt_is_causal=None` on
            kwargs[kw] = value
        return forward(self, *args, **kwargs)

    cls.forward = patched
    return True


# kind -> applier(params) -> applied: the kinds set before the script runs
START = {"config": set_config, "call_kwarg": call_kwarg}


def config_known(name: str) -> bool:
    """Whether a `--try config:NAME=VALUE` names a switch of the running torch."""
    mod, attr = _config_module(name)
    return mod is not None and hasattr(mod, attr)
