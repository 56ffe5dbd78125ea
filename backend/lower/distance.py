"""cdist's direct form: out[..., i, j] = ||x1[..., i, :] - x2[..., j, :]||_p as one reduction over
the feature dim of the pairwise differences (p = 0: nonzero count, 1: sum, 2: sqrt of squares,
inf: max, else (sum |d|^p)^(1/p) with lower/elementwise_math.py's pow). Where eager would take its matmul route
for p = 2 (more than 25 rows a side, unless compute_mode says otherwise) it stays an ATen call:
that route rounds differently (|x|^2 + |y|^2 - 2xy)."""

from __future__ import annotations

import torch

from fxlens.backend.ir import Pointwise, Value, broadcast_index, compute_dtype
from fxlens.backend.lower.core import MetaLike, reduction, register, shape_of
from fxlens.backend.lower.elementwise_math import math_pointwise
from fxlens.backend.symbolic import is_static

aten = torch.ops.aten


@register(aten._cdist_forward.default)
def _cdist(G, node, meta, x1, x2, p, compute_mode=None):
    if not isinstance(x1, Value) or not isinstance(x2, Value) or not meta.dtype.is_floating_point:
        return None
    if not is_static(*x1.shape, *x2.shape) or x1.shape[-1] == 0:
        return None
    P, R = x1.shape[-2], x2.shape[-2]
    if p == 2 and compute_mode != 2 and (compute_mode == 1 or P > 25 or R > 25):
        return None  # eager's matmul form
    x1, x2 = G.use(x1, node), G.use(x2, node)
    out_shape = shape_of(meta)
    nb = len(out_shape) - 2

    def pair(ctx, idx):
        b = list(idx[:nb])
        a = x1.load(ctx, broadcast_index(b, x1.shape[:-2], out_shape[:-2]) + [idx[nb], idx[-1]])
        c = x2.load(ctx, broadcast_index(b, x2.shape[:-2], out_shape[:-2]) + [idx[nb + 1], idx[-1]])
        return (a, x1.dtype), (c, x2.dtype)

    return _pnorm(G, node, meta, tuple(out_shape) + (x1.shape[-1],), pair, p)


@register(aten._pdist_forward.default)
def _pdist(G, node, meta, x, p=2):
    """Rows i < j of x in row-major pair order: pair k's (i, j) from k (a square root in float64,
    then corrected by one step either way), then cdist's reduction."""
    if (
        not isinstance(x, Value)
        or len(x.shape) != 2
        or not is_static(*x.shape)
        or not meta.dtype.is_floating_point
    ):
        return None
    n, m = x.shape
    if n < 2:  # no pairs: an empty result
        return Pointwise(
            lambda ctx, idx: ctx.full(0.0, meta.dtype), (0,), meta.dtype, meta.device, node, cheap=True
        )
    if m == 0:
        return None
    x = G.use(x, node)

    def start(i):  # first pair index of row i
        return f"({i} * {n} - ({i} * ({i} + 1)) // 2)"

    def pair(ctx, idx):
        k = ctx.index_tensor(idx[0], torch.int64)  # a constant when there is one pair
        r = ctx.op(f"tl.sqrt((-8 * {k} + {4 * n * (n - 1) - 7}).to(tl.float64)) / 2.0 - 0.5")
        i = ctx.op(f"{n - 2} - tl.floor({r}).to(tl.int64)")
        i = ctx.op(f"tl.where({start(f'({i} + 1)')} <= {k}, {i} + 1, {i})")
        i = ctx.op(f"tl.minimum(tl.maximum(tl.where({start(i)} > {k}, {i} - 1, {i}), 0), {n - 2})")
        j = ctx.op(f"tl.minimum({k} - {start(i)} + {i} + 1, {n - 1})")
        return (x.load(ctx, [i, idx[-1]]), x.dtype), (x.load(ctx, [j, idx[-1]]), x.dtype)

    return _pnorm(G, node, meta, tuple(shape_of(meta)) + (m,), pair, p)


def _pnorm(G, node, meta, full, pair, p):
    """||a - b||_p over the last dim of `full`, a and b from `pair(ctx, idx)`."""
    out_shape = full[:-1]
    cdt = compute_dtype(meta.dtype)

    def diff(ctx, idx):
        (a, adt), (c, cdt_) = pair(ctx, idx)
        d = ctx.op(f"tl.abs({ctx.cast(a, adt, cdt)} - {ctx.cast(c, cdt_, cdt)})")
        if p == 0:
            return ctx.op(f"({d} != 0).to({'tl.float64' if cdt == torch.float64 else 'tl.float32'})")
        if p in (1, float("inf")):
            return d
        if p == 2:
            return ctx.op(f"{d} * {d}")
        return ctx.op(f"_fx_pow({d}.to(tl.float64), tl.full([1], {float(p)!r}, tl.float64)).to({d}.dtype)")

    src = Pointwise(diff, full, cdt, meta.device, None)
    if p not in (0, 1, 2, float("inf")):
        inner = src.fn

        def fn(ctx, idx):
            from fxlens.backend.lower.math_helpers import MATH

            ctx.helpers["_fx_math"] = MATH
            return inner(ctx, idx)

        src.fn = fn
    rtype = "max" if p == float("inf") else "sum"
    red = reduction(G, None, MetaLike(out_shape, cdt, meta.device), src, [len(full) - 1], rtype, False)
    if red is None:
        return None
    if p in (0, 1, float("inf")):
        return Pointwise(lambda ctx, idx: red.load(ctx, idx), out_shape, meta.dtype, meta.device, node)
    if p == 2:
        return Pointwise(lambda ctx, idx: ctx.op(f"tl.sqrt({red.load(ctx, idx)})"), out_shape, meta.dtype,
                         meta.device, node)  # fmt: skip
    return math_pointwise(G, node, meta, [red, 1.0 / p], "_fx_pow", None)
