"""diagonal (a view: an index remapping, or a strided view of a realized buffer), diagonal_scatter
(a pointwise select between the source and the input), and new_empty_strided (never-stored zeros,
as lower/rng.py's `empty`: uninitialized memory may hold anything)."""

from __future__ import annotations

import torch

from fxlens.backend.ir import Pointwise, Value, broadcast_index
from fxlens.backend.lower.core import register, shape_of
from fxlens.backend.symbolic import is_static

aten = torch.ops.aten


def _dims(x, offset, dim1, dim2):
    n = len(x.shape)
    d1, d2 = dim1 % n, dim2 % n
    rest = [d for d in range(n) if d not in (d1, d2)]
    return d1, d2, rest, max(-offset, 0), max(offset, 0)


@register(aten.diagonal.default)
def _diagonal(G, node, meta, x, offset=0, dim1=0, dim2=1):
    """out[rest..., i] = x[..., i + max(-offset, 0) at dim1, ..., i + max(offset, 0) at dim2, ...]."""
    if not isinstance(x, Value) or len(x.shape) < 2 or not is_static(*x.shape):
        return None
    d1, d2, rest, o1, o2 = _dims(x, offset, dim1, dim2)

    def remap(idx):
        src = [None] * len(x.shape)
        for d, i in zip(rest, idx[:-1], strict=True):
            src[d] = i
        src[d1] = f"({idx[-1]} + {o1})" if o1 else idx[-1]
        src[d2] = f"({idx[-1]} + {o2})" if o2 else idx[-1]
        return src

    return G.view(node, meta, x, (offset, dim1, dim2), remap)


@register(aten.diagonal_scatter.default)
def _diagonal_scatter(G, node, meta, x, src, offset=0, dim1=0, dim2=1):
    """x with its diagonal replaced by src: where(on the diagonal, src[...], x[...])."""
    if not isinstance(x, Value) or not isinstance(src, Value) or len(x.shape) < 2 or not is_static(*x.shape):
        return None
    x, src = G.use(x, node), G.use(src, node)
    d1, d2, rest, o1, o2 = _dims(x, offset, dim1, dim2)
    length = src.shape[-1] if src.shape else 0
    if length == 0:
        return Pointwise(lambda ctx, idx: x.load(ctx, idx), shape_of(meta), meta.dtype, meta.device, node)

    def fn(ctx, idx):
        i = ctx.op(f"tl.minimum(tl.maximum(({idx[d1]}) - {o1}, 0), {length - 1})")  # clamped: in bounds
        on = ctx.op(f"(({idx[d1]}) - {o1} == ({idx[d2]}) - {o2}) & (({idx[d1]}) - {o1} >= 0)")
        s = ctx.cast(src.load(ctx, broadcast_index([idx[d] for d in rest] + [i], src.shape, src.shape)),
                     src.dtype, meta.dtype)  # fmt: skip
        v = x.load(ctx, idx)
        return ctx.op(f"tl.where({on}, {s}, {v})")

    return Pointwise(fn, shape_of(meta), meta.dtype, meta.device, node)


@register(aten.new_empty_strided.default)
def _new_empty_strided(G, node, meta, x, size, stride, **kwargs):
    dt = meta.dtype
    return Pointwise(lambda ctx, idx: ctx.full(0, dt), shape_of(meta), dt, meta.device, node, cheap=True)
