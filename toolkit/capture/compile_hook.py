"""The one hook fxlens puts on `torch.compile` and `torch._dynamo.optimize` in the script's process.

Two parts of fxlens need every compile call the script makes: the runner (record the backend each
call asks for and where, apply FXLENS_BACKEND_OVERRIDE) and doctor's probe (time every call of each
object torch.compile returns). Both register here, by name, so torch.compile is wrapped once
whoever runs:
- a route sees the backend asked for (and the API and the caller's frame) before torch compiles,
  and returns the backend to use;
- a wrap sees the object torch returned (with the options it was compiled with) and returns what
  the script gets instead.

Bug reports written for older torch call `torch._dynamo.optimize("inductor")(fn)` directly;
torch.compile calls it too, so only calls from outside torch count there.

The registry lives on the wrapper itself: a test that puts the real torch.compile back also drops
what was registered, and registering again under a name replaces the earlier entry.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from fxlens.capture.imports import when_imported
from fxlens.trace.userframes import called_by_torch

# route(backend asked, api, caller frame) -> backend to use
Route = Callable[[object, str, object], object]
# wrap(model, what torch returned, compile options, caller frame) -> what the script gets
Wrap = Callable[[object, object, dict, object], object]


@dataclass
class Hooks:
    """What is registered on one installed wrapper."""

    routes: dict = field(default_factory=dict)
    wraps: dict = field(default_factory=dict)

    def route(self, backend, api: str, frame):
        for route in self.routes.values():
            backend = route(backend, api, frame)
        return backend

    def wrap(self, model, compiled, options: dict, frame):
        for wrap in self.wraps.values():
            compiled = wrap(model, compiled, options, frame)
        return compiled


def observe(name: str, route: Route | None = None, wrap: Wrap | None = None) -> Hooks:
    """Register `route` and/or `wrap` under `name`, wrapping torch.compile first if it is not yet."""
    import torch

    hooks = getattr(torch.compile, "_fxlens_hooks", None)
    if hooks is None:
        hooks = _install(torch)
    if route is not None:
        hooks.routes[name] = route
    if wrap is not None:
        hooks.wraps[name] = wrap
    return hooks


def _install(torch) -> Hooks:
    hooks = Hooks()
    real = torch.compile

    def compile(model=None, **kwargs):
        frame = sys._getframe(1)  # the caller of torch.compile
        if hooks.routes:
            kwargs["backend"] = hooks.route(kwargs.get("backend", "inductor"), "torch.compile", frame)
        if model is None:
            # `@torch.compile(backend=...)`: torch's own decorator would call torch.compile again (this
            # wrapper) and route the call twice; compile with the real one once the function is known
            return lambda fn: hooks.wrap(fn, real(fn, **kwargs), kwargs, frame)
        return hooks.wrap(model, real(model, **kwargs), kwargs, frame)

    compile._fxlens_hooks = hooks
    compile.__wrapped__ = real
    compile.__doc__ = real.__doc__
    torch.compile = compile
    # importing torch._dynamo costs ~0.9 s: a script that never compiles should not pay it here
    when_imported("torch._dynamo", lambda dynamo: _install_optimize(dynamo, hooks))
    return hooks


def _install_optimize(dynamo, hooks: Hooks) -> None:
    current = dynamo.optimize
    if getattr(current, "_fxlens_hooks", None) is hooks:
        return
    real = getattr(current, "_fxlens_real", current)

    def optimize(*args, **kwargs):
        if called_by_torch():
            return real(*args, **kwargs)  # torch.compile's own call: routed and wrapped there
        frame = sys._getframe(1)
        backend = args[0] if args else kwargs.pop("backend", "inductor")
        if hooks.routes:
            backend = hooks.route(backend, "torch._dynamo.optimize", frame)
        context = real(backend, *args[1:], **kwargs)
        if not hooks.wraps:
            return context
        options = {"backend": backend, "dynamic": kwargs.get("dynamic"), "fullgraph": kwargs.get("nopython")}
        return _WrappedOptimize(context, options, frame, hooks)

    optimize._fxlens_hooks = hooks
    optimize._fxlens_real = real
    optimize.__wrapped__ = real
    dynamo.optimize = optimize


class _WrappedOptimize:
    """What `torch._dynamo.optimize(backend)` returns, its `(fn)` call wrapped like torch.compile's."""

    def __init__(self, context, options: dict, frame, hooks: Hooks):
        self._context, self._options, self._frame, self._hooks = context, options, frame, hooks

    def __call__(self, model):
        return self._hooks.wrap(model, self._context(model), self._options, self._frame)

    def __getattr__(self, name):  # `with torch._dynamo.optimize(...):` and the rest, untouched
        return getattr(self._context, name)

    def __enter__(self):
        return self._context.__enter__()

    def __exit__(self, *exc):
        return self._context.__exit__(*exc)
