"""bucketize and searchsorted: a binary search per element over a sorted row, unrolled.

ceil(log2(n + 1)) halving steps over the row of n boundaries, each a gather load. The predicate is
written as eager's comparisons are: `right=False` finds the first boundary b with b >= x, so a NaN
value (no b >= NaN) lands past the end, as in eager; `right=True` the first b > x. Rows are the
last dim of `sorted_sequence` (or one 1-D row for every value). A `sorter` stays an ATen call.
"""

from __future__ import annotations

import math

import torch

from fxlens.backend.ir import Pointwise, Value, compute_dtype
from fxlens.backend.lower.core import promoted_dtype, register, shape_of
from fxlens.backend.symbolic import is_static

aten = torch.ops.aten


def _search(G, node, meta, seq, vals, right: bool):
    if not isinstance(seq, Value) or not isinstance(vals, Value) or not seq.shape:
        return None
    if not is_static(*seq.shape, *vals.shape) or seq.dtype == torch.bool or vals.dtype == torch.bool:
        return None
    n = seq.shape[-1]
    lead = len(seq.shape) - 1
    if lead and tuple(seq.shape[:-1]) != tuple(vals.shape[:-1]):
        return None
    seq, vals = G.use(seq, node), G.use(vals, node)
    cdt = compute_dtype(promoted_dtype(seq, vals))
    out_dt = meta.dtype
    steps = max(1, math.ceil(math.log2(n + 1)))
    cmp = ">" if right else ">="

    def fn(ctx, idx):
        x = ctx.cast(vals.load(ctx, idx), vals.dtype, cdt)
        lo, hi = ctx.full(0, torch.int64), ctx.full(n, torch.int64)
        for _ in range(steps):
            mid = ctx.op(f"tl.minimum(({lo} + {hi}) // 2, {max(n - 1, 0)})")  # in bounds once lo == hi
            b = ctx.cast(seq.load(ctx, list(idx[:lead]) + [mid]), seq.dtype, cdt)
            left = ctx.op(f"({lo} < {hi}) & ~({b} {cmp} {x})")  # the answer is past mid
            stay = ctx.op(f"({lo} < {hi}) & ({b} {cmp} {x})")
            lo, hi = ctx.op(f"tl.where({left}, {mid} + 1, {lo})"), ctx.op(f"tl.where({stay}, {mid}, {hi})")
        return ctx.cast(lo, torch.int64, out_dt)

    return Pointwise(fn, shape_of(meta), out_dt, meta.device, node)


@register(aten.bucketize.Tensor)
def _bucketize(G, node, meta, x, boundaries, *, out_int32=False, right=False):
    return _search(G, node, meta, boundaries, x, right)


@register(aten.searchsorted.Tensor)
def _searchsorted(G, node, meta, seq, x, *, out_int32=False, right=False, side=None, sorter=None):
    if sorter is not None:
        return None
    return _search(G, node, meta, seq, x, right or side == "right")
