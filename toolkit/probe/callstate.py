"""The state a compiled call ran in, kept so that doctor's replay of it runs in the same state.

Dynamo guards on global state (grad mode, autocast, the torch function mode stack) and on module
attributes (`training` of every submodule): a call replayed after the script has changed any of
them (`model.eval()` after a training loop, a `torch.no_grad()` block that has ended) is another
call, which compiles again. That compile is doctor's, not the script's, and its steady state is not
the one the script ran at. So the probe takes the state before each call (`capture`) and the replay
runs inside `restored(state)`, which puts the script's later state back afterwards.

What is restored: grad mode and inference mode, autocast (enabled and dtype, per device type in
use), `training` of every module the call can reach (the compiled module's submodules; for a
function, modules in its closure and in the globals it names), the CPU and CUDA RNG states, and
`torch.device(...)` contexts. Any other torch function mode or dispatch mode active at the call
cannot be re-created from the outside: `unrestorable` names it, and that call is not replayed.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

# function modes doctor can re-create: `with torch.device(...)` pushes torch.utils._device.DeviceContext
_RESTORABLE_MODES = ("DeviceContext",)


@dataclass
class CallState:
    """What one call ran with (taken before the call; see `capture`)."""

    grad: bool
    inference: bool
    training: list = field(default_factory=list)  # (module, training flag) for every reachable module
    autocast: dict = field(default_factory=dict)  # device type -> (enabled, dtype)
    rng: object = None  # torch.get_rng_state()
    cuda_rng: list | None = None  # torch.cuda.get_rng_state_all() when CUDA is initialised
    devices: list = field(default_factory=list)  # torch.device contexts active, outermost first
    other_modes: list = field(default_factory=list)  # class names of modes that cannot be re-created


def _modules_of(fn) -> list:
    """Every nn.Module a call of `fn` can reach: the module itself (or a bound method's), else the
    modules in the function's closure and in the globals its code names, with their submodules."""
    import torch

    target = getattr(fn, "__self__", None) if not isinstance(fn, torch.nn.Module) else fn
    roots = [target] if isinstance(target, torch.nn.Module) else []
    if not roots:
        func = getattr(fn, "__func__", fn)
        code = getattr(func, "__code__", None)
        for cell in getattr(func, "__closure__", None) or ():
            with contextlib.suppress(ValueError):  # an empty cell
                roots.append(cell.cell_contents)
        glb = getattr(func, "__globals__", {}) or {}
        roots += [glb[n] for n in (code.co_names if code else ()) if n in glb]
        roots = [r for r in roots if isinstance(r, torch.nn.Module)]
    seen: dict[int, object] = {}
    for root in roots:
        for m in root.modules():
            seen.setdefault(id(m), m)
    return list(seen.values())


def _autocast_devices() -> list[str]:
    import torch

    return ["cpu", "cuda"] if torch.cuda.is_initialized() else ["cpu"]


def capture(fn) -> CallState:
    """The state a call of `fn` is about to run in."""
    import torch

    from fxlens.backend.torch_compat import dispatch_mode_stack, function_mode_stack

    devices, other = [], []
    for mode in function_mode_stack():
        name = type(mode).__name__
        if name in _RESTORABLE_MODES and getattr(mode, "device", None) is not None:
            devices.append(mode.device)
        else:
            other.append(name)
    other += [type(m).__name__ for m in dispatch_mode_stack()]
    return CallState(
        grad=torch.is_grad_enabled(),
        inference=torch.is_inference_mode_enabled(),
        training=[(m, m.training) for m in _modules_of(fn)],
        autocast={
            d: (torch.is_autocast_enabled(d), torch.get_autocast_dtype(d)) for d in _autocast_devices()
        },
        rng=torch.get_rng_state(),
        cuda_rng=torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None,
        devices=devices,
        other_modes=other,
    )


def capture_or_none(fn) -> CallState | None:
    """`capture(fn)`, or None when the state cannot be read: the script's call runs regardless."""
    try:
        return capture(fn)
    except Exception:  # noqa: BLE001 - the probe must never break the call it watches
        return None


def unrestorable(state: CallState) -> str | None:
    """Why the call cannot be replayed in its own state (None: it can)."""
    if state.other_modes:
        return (
            f"the call ran under {', '.join(state.other_modes)} (a torch function or dispatch mode), which "
            "doctor cannot re-create from outside the script"
        )
    return None


def describe(state: CallState) -> dict:
    """The restored state, JSON-ready: what the replay ran with."""
    return {
        "grad": state.grad,
        "inference": state.inference,
        "modules": len(state.training),
        "training": sum(1 for _, t in state.training if t),
        "autocast": {d: [e, str(dt)] for d, (e, dt) in state.autocast.items() if e},
        "devices": [str(d) for d in state.devices],
    }


def _set_flags_and_rng(state: CallState) -> None:
    """Every module's `training` flag and the RNG states as `state` has them."""
    import torch

    # the attribute itself, not .train()/.eval(): a module may override those, and the flags were
    # read per module, so setting each one restores exactly what was read
    for m, flag in state.training:
        m.training = flag
    torch.set_rng_state(state.rng)
    if state.cuda_rng is not None:
        torch.cuda.set_rng_state_all(state.cuda_rng)


@contextlib.contextmanager
def restored(state: CallState):
    """Run the body in `state`; afterwards the state before it is back (flags, modes and RNG)."""
    import torch

    now = CallState(
        grad=torch.is_grad_enabled(),
        inference=torch.is_inference_mode_enabled(),
        training=[(m, m.training) for m, _ in state.training],
        rng=torch.get_rng_state(),
        cuda_rng=torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None,
    )
    try:
        _set_flags_and_rng(state)
        with contextlib.ExitStack() as stack:
            stack.enter_context(torch.inference_mode(state.inference))
            stack.enter_context(torch.set_grad_enabled(state.grad))
            for device, (enabled, dtype) in state.autocast.items():
                if (torch.is_autocast_enabled(device), torch.get_autocast_dtype(device)) == (enabled, dtype):
                    continue  # as it is: entering autocast again would change nothing but the nesting
                stack.enter_context(torch.autocast(device_type=device, dtype=dtype, enabled=enabled))
            for device in state.devices:
                stack.enter_context(torch.device(device))
            yield
    finally:
        _set_flags_and_rng(now)
