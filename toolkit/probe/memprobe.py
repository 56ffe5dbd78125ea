"""Tensor memory of one compiled function's call, eager vs compiled, measured in the script's process.

After the script (doctor's probe, fxlens.probe.hook.measure_all), each function's typical call is
made again, eager then compiled, twice each:

- once under torch's profiler with `profile_memory=True`: every CPU (and CUDA) allocation and free
  of the call is an event, so the call's peak above its starting level is exact; when the script
  ran a backward through the function, the backward (`torch.autograd.grad` to the graph's leaves,
  so no `.grad` changes) runs in the same window, and the peak spans both;
- once under `torch.autograd.graph.saved_tensors_hooks`: every tensor autograd keeps for backward
  passes the pack hook, eager's per op and the compiled graph's all at once. Storages are counted
  once, and those of the model's parameters and the call's arguments not at all (they live anyway):
  what remains are the activations the call adds until its backward.

Then the tensors the compiled code holds apart from the model (fxlens.probe.heldtensors). Each
part's seconds are returned: the profiler's own cost is the measurement's price.
"""

from __future__ import annotations

import gc
import os
import sys
import time

from fxlens.probe.heldtensors import held_tensors, own_storages, storage_key_bytes
from fxlens.trace.userfiles import is_user_file

# saved tensors listed per call, largest first
TOP_SAVED = 8
_MARK = "fxlens::backward"


def _tensors(out) -> list:
    import torch

    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        return [t for x in out for t in _tensors(x)]
    if isinstance(out, dict):
        return [t for x in out.values() for t in _tensors(x)]
    return [t for t in (getattr(out, k, None) for k in ("loss", "logits")) if isinstance(t, torch.Tensor)]


def _leaves(outs: list) -> list:
    """The graph's leaf tensors (parameters, inputs requiring grad) behind `outs`."""
    leaves, seen = {}, set()
    stack = [t.grad_fn for t in outs if t.grad_fn is not None]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        var = getattr(node, "variable", None)
        if var is not None:
            leaves[id(var)] = var
        stack.extend(n for n, _ in node.next_functions)
    return list(leaves.values())


def _backward(out) -> bool:
    """The call's backward without touching `.grad`: gradients of every output to every leaf.
    False when nothing in the output requires grad (no backward to run)."""
    import torch

    outs = [t for t in _tensors(out) if t.requires_grad and t.grad_fn is not None]
    # a scalar among them is the loss the script backpropagates (HF's `loss` beside its `logits`)
    outs = [t for t in outs if t.numel() == 1] or outs
    leaves = _leaves(outs)
    if outs and leaves:
        torch.autograd.grad(outs, leaves, [torch.ones_like(t) for t in outs], allow_unused=True)
    return bool(outs and leaves)


def _peaks(fn, args, kwargs, backward: bool) -> dict:
    """The call's peak tensor bytes above its start (forward, and with the backward), from the
    profiler's memory events, and what the forward leaves alive (outputs and saved tensors)."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    gc.collect()
    activities = [ProfilerActivity.CPU]
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        activities.append(ProfilerActivity.CUDA)
    t0 = time.perf_counter()
    with profile(activities=activities, profile_memory=True) as prof:
        out = fn(*args, **kwargs)
        if backward:
            with record_function(_MARK):
                backward = _backward(out)
        del out
    took = time.perf_counter() - t0
    events = prof.profiler.kineto_results.events()
    mark = next((e.start_ns() for e in events if e.name() == _MARK), None)
    level = fwd = peak = 0
    at_mark = None
    for e in sorted((e for e in events if e.name() == "[memory]"), key=lambda e: e.start_ns()):
        if mark is not None and at_mark is None and e.start_ns() >= mark:
            at_mark = level
        level += e.nbytes()
        peak = max(peak, level)
        if mark is None or e.start_ns() < mark:
            fwd = max(fwd, level)
    return {
        "peak": peak,
        "forward_peak": fwd,
        "after_forward": at_mark,
        "backward": backward,
        "profiled_s": round(took, 4),
    }


def _model_line() -> tuple[str | None, int | None]:
    """The innermost frame on the stack outside torch and fxlens (where an op saved a tensor): the
    model's own line, a library's (transformers' modeling file) included, else the user's."""
    import torch

    skip = (os.path.dirname(torch.__file__), os.path.dirname(os.path.dirname(__file__)))
    f = sys._getframe(2)
    while f is not None and (f.f_code.co_filename.startswith(skip) or f.f_code.co_filename.startswith("<")):
        f = f.f_back
    if f is None or not (is_user_file(f.f_code.co_filename) or os.path.exists(f.f_code.co_filename)):
        return None, None
    return f.f_code.co_filename, f.f_lineno


def _saved(fn, args, kwargs, skip: set[int]) -> dict:
    """The activations the call saves for backward, storages counted once, `skip` left out."""
    import torch

    kept: dict[int, dict] = {}
    order: list[tuple] = []  # (storage key, shape, dtype) of every saved tensor, in save order

    def pack(t):
        key, nbytes = storage_key_bytes(t)
        dtype = str(t.dtype).replace("torch.", "")
        order.append((key, list(t.shape), dtype, int(nbytes)))
        if key not in skip and key not in kept:
            file, line = _model_line()
            op = type(t.grad_fn).__name__ if t.grad_fn is not None else None
            kept[key] = {"shape": list(t.shape), "dtype": dtype, "bytes": int(nbytes), "op": op}
            kept[key].update(file=file, line=line)
        return t

    t0 = time.perf_counter()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn(*args, **kwargs)
    # the graph's leaves (parameters, inputs requiring grad, a global model's weights) live anyway
    leaves = {storage_key_bytes(t)[0] for t in _leaves([t for t in _tensors(out) if t.grad_fn is not None])}
    del out
    for key in leaves:
        kept.pop(key, None)
    own = skip | leaves
    top = sorted(kept.values(), key=lambda s: -s["bytes"])
    return {
        "bytes": sum(s["bytes"] for s in kept.values()),
        "count": len(kept),
        "top": top[:TOP_SAVED],
        # the compiled graph's saved tensors in order: matched to its backward graph's inputs
        "order": [
            {"shape": shape, "dtype": dtype, "bytes": n, "own": key in own} for key, shape, dtype, n in order
        ],
        "seconds": round(time.perf_counter() - t0, 4),
    }


def _plain_s(fn, args, kwargs) -> float:
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    del out
    return time.perf_counter() - t0


def _global_modules(fn) -> list:
    """The nn.Modules a function's code names from its globals (a global model it calls)."""
    import torch

    code, glb = getattr(fn, "__code__", None), getattr(fn, "__globals__", None) or {}
    names = code.co_names if code is not None else ()
    return [glb[n] for n in names if isinstance(glb.get(n), torch.nn.Module)]


def measure(eager_fn, compiled_fn, args, kwargs, *, backward: bool) -> dict:
    """Eager vs compiled tensor memory of one call (see the module's docstring)."""
    import torch

    t0 = time.perf_counter()
    owner = getattr(eager_fn, "__self__", eager_fn)
    skip = own_storages(owner, args, kwargs, _global_modules(eager_fn))
    out: dict = {}
    # the saved-tensor pass needs grad; under no_grad nothing is saved and it is skipped
    grad = torch.is_grad_enabled()
    for side, fn in (("eager", eager_fn), ("compiled", compiled_fn)):
        plain = _plain_s(fn, args, kwargs)  # the call unprofiled: what the profiler adds is its cost
        out[side] = _peaks(fn, args, kwargs, backward)
        out[side]["plain_s"] = round(plain, 4)
        out[side]["saved"] = _saved(fn, args, kwargs, skip) if grad else None
    if out["eager"]["saved"]:
        out["eager"]["saved"].pop("order")
    code_of = type(owner).forward if isinstance(owner, torch.nn.Module) else eager_fn
    entries = held_tensors(code_of, skip)
    out["held"] = {"entries": entries, "bytes": sum(e["bytes"] for e in entries)}
    out["backward"] = out["eager"]["backward"]  # whether a backward ran (an output required grad)
    out["seconds"] = round(time.perf_counter() - t0, 4)
    return out


def measure_call(call: tuple, call_state, probe) -> dict:
    """doctor's probe, after the script: `measure` on a record's typical call, in the state it ran
    in, with its backward whenever the output requires grad (whether the script ran one cannot be
    told: HF outputs and lazily compiled backwards hide it). `probe.compiles` counts compiles: one
    during the measurement is said, not hidden."""
    from fxlens.probe.callstate import restored

    eager_fn, compiled_fn, args, kwargs = call
    before = probe.compiles
    try:
        with restored(call_state):
            out = measure(eager_fn, compiled_fn, args, kwargs, backward=True)
    except Exception as e:  # noqa: BLE001 - the timing stands without it
        return {"skipped": f"error: {type(e).__name__}: {str(e)[:200]}"}
    out["compiles"] = probe.compiles - before
    return out
