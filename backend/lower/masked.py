"""masked_scatter and put: stores whose positions depend on the data.

masked_scatter(x, mask, source): the k-th True of the (broadcast) mask, in row-major order, takes
source's k-th element. The rank k is an inclusive cumsum of the mask over the flattened tensor
(lower/scan.py's Scan, which loops over blocks for long rows), then a pointwise gather from source.
put(x, index, source, accumulate): an indexed store through flat (row-major) indices, negative ones
wrapped, with lower/index.py's scatter kernel (atomic adds when accumulating).
"""

from __future__ import annotations

import torch

from fxlens.backend.ir import Pointwise, Value, broadcast_index, contiguous_strides, decompose, linear, numel
from fxlens.backend.lower.core import register, shape_of
from fxlens.backend.lower.index import INDEX_DTYPES, scatter_into
from fxlens.backend.lower.scan import Scan
from fxlens.backend.symbolic import is_static

aten = torch.ops.aten


@register(aten.masked_scatter.default)
def _masked_scatter(G, node, meta, x, mask, source):
    if not all(isinstance(v, Value) for v in (x, mask, source)) or not is_static(*x.shape, *source.shape):
        return None
    shape = shape_of(meta)
    n, m = numel(shape), numel(source.shape)
    if n == 0 or m == 0:
        return None
    x, mask, source = G.use(x, node), G.use(mask, node), G.use(source, node)

    def flag(ctx, idx):  # the mask over (1, n), as int64
        full = decompose(idx[1], shape)
        return ctx.op(f"({mask.load(ctx, broadcast_index(full, mask.shape, shape))} != 0).to(tl.int64)")

    flags = Pointwise(flag, (1, n), torch.int64, meta.device, None)
    rank = G.realize(Scan(flags, "cumsum", (1,), True, (1, n), torch.int64, meta.device, node))

    def fn(ctx, idx):
        k = linear(idx, contiguous_strides(shape))
        on = ctx.op(f"{mask.load(ctx, broadcast_index(idx, mask.shape, shape))} != 0")
        pos = ctx.op(f"tl.minimum(tl.maximum({rank.load(ctx, ['0', k])} - 1, 0), {m - 1})")  # in bounds
        src = ctx.cast(source.load(ctx, decompose(pos, source.shape)), source.dtype, meta.dtype)
        return ctx.op(f"tl.where({on}, {src}, {ctx.cast(x.load(ctx, idx), x.dtype, meta.dtype)})")

    return Pointwise(fn, shape, meta.dtype, meta.device, node)


@register(aten.put.default)
def _put(G, node, meta, x, index, source, accumulate=False):
    if not all(isinstance(v, Value) for v in (x, index, source)) or index.dtype not in INDEX_DTYPES:
        return None
    if tuple(index.shape) != tuple(source.shape) or not is_static(*x.shape) or not x.shape:
        return None
    index = G.use(index, node)
    n = numel(x.shape)

    def where(ctx, idx):
        i = index.load(ctx, idx)
        i = ctx.op(f"tl.where({i} < 0, {i} + {n}, {i})")
        return decompose(i, x.shape)

    return scatter_into(G, node, meta, x, source, where, index.shape, bool(accumulate))


@register(aten.nonzero_static.default)
def _nonzero_static(G, node, meta, x, *, size, fill_value=-1):
    """Row r holds the coordinates of the (r + 1)-th nonzero in row-major order (else fill_value):
    the inclusive cumsum of the nonzero flags, then an unrolled binary search of it per row, so
    every output element is a gather (no atomics, deterministic)."""
    if not isinstance(x, Value) or not is_static(*x.shape, size):
        return None
    shape = tuple(x.shape)
    n = numel(shape)
    if size == 0 or not shape:  # an empty result: no rows, or no coordinates (0-d input)
        return Pointwise(lambda ctx, idx: ctx.full(0, torch.int64), (size, len(shape)), torch.int64, meta.device,
                         node, cheap=True)  # fmt: skip
    if n == 0:
        return None
    x = G.use(x, node)

    def flag(ctx, idx):
        return ctx.op(f"({x.load(ctx, decompose(idx[1], shape))} != 0).to(tl.int64)")

    flags = Pointwise(flag, (1, n), torch.int64, meta.device, None)
    rank = G.realize(Scan(flags, "cumsum", (1,), True, (1, n), torch.int64, meta.device, node))
    steps = max(1, (n).bit_length())

    def fn(ctx, idx):
        want = ctx.op(f"({idx[0]}).to(tl.int64) + 1")
        lo, hi = ctx.full(0, torch.int64), ctx.full(n, torch.int64)
        for _ in range(steps):  # the first p with rank[p] >= want
            mid = ctx.op(f"tl.minimum(({lo} + {hi}) // 2, {n - 1})")
            ge = ctx.op(f"{rank.load(ctx, ['0', mid])} >= {want}")
            more = ctx.op(f"{lo} < {hi}")
            lo, hi = (ctx.op(f"tl.where({more} & ~{ge}, {mid} + 1, {lo})"),
                      ctx.op(f"tl.where({more} & {ge}, {mid}, {hi})"))  # fmt: skip
        coords = decompose(lo, shape)
        c = coords[-1]
        for d in range(len(shape) - 2, -1, -1):
            c = f"tl.where({idx[1]} == {d}, {coords[d]}, {c})"
        return ctx.op(f"tl.where({lo} < {n}, {c}, {fill_value}).to(tl.int64)")

    return Pointwise(fn, (size, len(shape)), torch.int64, meta.device, node)
