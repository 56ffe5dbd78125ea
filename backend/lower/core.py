"""The lowering table and the building blocks every family's lowerings are made of.

A lowering is registered per op (`register`) in `LOWERINGS`. Each gets the graph lowering `G`, the FX
node, its output metadata (a fake tensor or a tuple of them) and the node's arguments with tensors
replaced by IR values. It returns an IR value (or tuple), or None to let the op run as an ATen
fallback. Ops missing from the table are fallbacks too, and are counted. `pointwise` and `reduction`
build the two kinds of IR value most lowerings return.
"""

from __future__ import annotations

import torch

from fxlens.backend.ir import Pointwise, Reduction, Value, broadcast_index, numel
from fxlens.backend.kernel_ctx import triton_literal
from fxlens.backend.symbolic import is_static, sizes

try:  # registers prims.fma, which Dynamo emits for addcmul_/lerp_ (optimizer steps)
    from fxlens.backend.torch_compat import inductor_prims  # noqa: F401
except Exception:  # pragma: no cover - older torch
    pass

LOWERINGS: dict = {}


def register(*ops):
    def deco(fn):
        for op in ops:
            LOWERINGS[op] = fn
        return fn

    return deco


def shape_of(meta) -> tuple:
    return sizes(meta.shape)


def pointwise(G, node, meta, inputs, fmt, compute=None, cheap=False, cast_result=True) -> Pointwise:
    """An elementwise op: inputs broadcast to `meta`'s shape, cast to `compute`, combined by `fmt`."""
    shape, out_dt = shape_of(meta), meta.dtype
    cdt = compute or out_dt
    vals = [G.use(v, node) if isinstance(v, Value) else v for v in inputs]

    def fn(ctx, idx):
        args = []
        for v in vals:
            if isinstance(v, Value):
                var = v.load(ctx, broadcast_index(idx, v.shape, shape))
                args.append(ctx.cast(var, v.dtype, cdt))
            else:
                args.append(triton_literal(wrapped_scalar(v, cdt)))
        if not any(isinstance(v, Value) for v in vals) and is_static(*vals):
            return ctx.full(eval(fmt(*args), {"float": float}), out_dt)  # noqa: S307
        res = ctx.op(fmt(*args))
        return ctx.cast(res, cdt, out_dt) if cast_result else res

    return Pointwise(fn, shape, out_dt, meta.device, node, cheap=cheap)


def wrapped_scalar(v, dtype: torch.dtype):
    """An int scalar as eager casts it into an unsigned dtype (uint8 + -3 adds 253); Triton refuses
    negative scalars with unsigned tensors."""
    if dtype == torch.uint8 and isinstance(v, int) and not isinstance(v, bool) and is_static(v):
        return v % 256
    return v


def promoted_dtype(*xs) -> torch.dtype:
    ms = [
        torch.empty([1] * bool(x.shape), dtype=x.dtype, device="meta") if isinstance(x, Value) else x
        for x in xs
    ]
    ms = [m if is_static(m) else 1 for m in ms]  # a symbolic size is an int
    return torch.result_type(*ms) if len(ms) == 2 else ms[0].dtype


def libdevice_form(device: torch.device, name: str, nargs: int = 1):
    """`libdevice.name(...)` as an expression maker when compiling for CUDA, else None."""
    if device.type != "cuda":
        return None
    return lambda *xs: f"libdevice.{name}({', '.join(xs[:nargs])})"


def normalize_dims(dims, ndim) -> tuple[int, ...]:
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return tuple(range(ndim))
    if isinstance(dims, int):
        dims = [dims]
    return tuple(sorted({d % max(ndim, 1) for d in dims}))


def reduction(G, node, meta, x, dims, rtype, keepdim=False, item=None, scale=None, src_dtype=None):
    if not isinstance(x, Value) or numel(x.shape) == 0:
        return None
    x = G.use(x, node)
    rd = normalize_dims(dims, len(x.shape))
    if not x.shape:
        rd = ()
    if rtype in ("sum", "prod") and src_dtype is not None:
        x = pointwise(G, None, MetaLike(x.shape, src_dtype, x.device), [x], lambda v: v, compute=x.dtype)
    if rtype in ("sum", "prod") and x.dtype.is_floating_point is False and meta.dtype.is_floating_point:
        return None
    r = Reduction(x, rtype, rd, keepdim, shape_of(meta), meta.dtype, meta.device, node, item, scale)
    return G.realize(r)


class MetaLike:
    def __init__(self, shape, dtype, device):
        self.shape, self.dtype, self.device = shape, dtype, device
