"""scatter_reduce and index_reduce with sum / mean / amax / amin, as passes of indexed stores.

Built on lower/index.py's scatter kernel (a copy of the destination, then kernels over the updates
that store through the index), one pass per step, each its own kernel so the steps are ordered:

    include_self=False:  store the reduction's identity at every indexed position
    sum / mean:          tl.atomic_add of each update        (mean: + a count pass, then a divide)
    amax / amin:         tl.atomic_max / tl.atomic_min, then a pass that stores the NaN updates
                         (eager propagates NaN; the GPU's float atomic_max, done on the bit
                         patterns, would not)

`prod` has no atomic (it stays an ATen call), nor do fp16/bf16/fp64 extremes or integer means
(eager floors those). As with index_put, the order of atomic additions is not eager's: float sums
of many updates to one position may differ in the last bits.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from fxlens.backend.ir import TL_DTYPE, Pointwise, Value, broadcast_index, compute_dtype, decompose, linear
from fxlens.backend.lower.core import register, shape_of
from fxlens.backend.lower.index import INDEX_DTYPES, Scatter, ScatterNode, index_along, wrap_negative

aten = torch.ops.aten

# (reduce, atomic function, dtypes) -- what each reduction's update pass stores with
_PASSES = {
    "sum": ("tl.atomic_add", (torch.float32, torch.float16, torch.float64, torch.int32, torch.int64)),
    "mean": ("tl.atomic_add", (torch.float32, torch.float64)),
    "amax": ("tl.atomic_max", (torch.float32, torch.int32, torch.int64)),
    "amin": ("tl.atomic_min", (torch.float32, torch.int32, torch.int64)),
}
_IDENTITY = {"sum": 0, "mean": 0, "amax": float("-inf"), "amin": float("inf")}


@dataclass(eq=False)
class ScatterPass(Scatter):
    """A Scatter whose store is `fn` (tl.store or an atomic); `nan_only` stores only NaN updates."""

    fn: str = "tl.store"
    nan_only: bool = False
    # the op this pass is a step of, when its result is not yet that op's value (`node` is then
    # None): the kernel is still named for the op, but the hooks never replay the whole op as it
    op: torch.fx.Node | None = None

    def emit(self, ctx, sn) -> None:
        ctx.enter(self.op or self.node)
        idx = decompose("xindex", self.shape)
        dt = self.dst.dtype
        if isinstance(self.src, Value):
            v = self.src.load(ctx, broadcast_index(idx, self.src.shape, self.shape))
            val = ctx.cast(v, self.src.dtype, dt)
        else:
            val = ctx.full(self.src, dt)
        mask = ctx.op(f"xmask & ({val} != {val})") if self.nan_only else "xmask"
        if dt != compute_dtype(dt):
            val = ctx.op(f"{val}.to({TL_DTYPE[dt]})")
        off = linear(self.where(ctx, idx), self.dst.stride, self.dst.offset)
        if "xindex" not in off:  # a 0-d destination: the pointer needs the block's shape
            off = f"{off} + 0 * xindex"
        root = self.dst.base
        p = ctx.pointer_param(root)
        ctx.loaded.setdefault(root.name, [])
        if self.x_node is not None:
            ctx.boundary[(self.x_node, None)] = self.dst
        ctx.emit(f"{self.fn}({p} + ({off}), {val}, {mask})")
        ctx.written[root.name] = root


def _reduce_into(G, node, meta, x, src, where, shape, reduce: str, include_self: bool):
    """dst = copy of x, then the passes of `reduce`; returns dst (or the mean's quotient)."""
    fn, dtypes = _PASSES.get(reduce, (None, ()))
    dt = meta.dtype
    if fn is None or dt not in dtypes or not isinstance(x, Value) or not isinstance(src, Value):
        return None
    x_node = node.args[0] if isinstance(node.args[0], torch.fx.Node) else None
    if x_node is None or any(s == 0 for s in shape):
        return None
    x = G.use(x, node)
    src = G.use(src, node)
    copy = Pointwise(lambda ctx, idx: x.load(ctx, idx), shape_of(meta), dt, meta.device, x_node)
    dst = G.realize(copy)

    passes = []

    def scatter(target, value, fn, nan_only=False, xn=x_node):
        # every pass a step (see ScatterPass.op) until the last one turns out to give the op's value
        sc = ScatterPass(
            target, value, where, False, tuple(shape), dt, meta.device, None, xn, fn, nan_only, node
        )
        G.items.append(ScatterNode(sc, target, mutation=True))
        passes.append(sc)

    if not include_self:
        ident = _IDENTITY[reduce]
        if not dt.is_floating_point and ident in (float("inf"), float("-inf")):
            ident = torch.iinfo(dt).max if ident > 0 else torch.iinfo(dt).min
        scatter(dst, ident, "tl.store")
    scatter(dst, src, fn)
    if reduce in ("amax", "amin") and dt.is_floating_point:
        scatter(dst, src, "tl.store", nan_only=True)
    if reduce in ("amax", "amin") and dt.is_floating_point and include_self:
        # a NaN already in x stays (eager); float atomics on bit patterns may replace it
        def keep_nan(ctx, idx):
            v = x.load(ctx, idx)
            return ctx.op(f"tl.where({v} != {v}, {v}, {dst.load(ctx, idx)})")

        return Pointwise(keep_nan, shape_of(meta), dt, meta.device, node)
    if reduce != "mean":
        # the last pass leaves the op's value in dst; replayed from dst as it was before that pass,
        # the whole op gives it again (sum: one pass from x; amax/amin: idempotent over src;
        # include_self=False: the positions it writes ignore what dst held)
        passes[-1].node = node
        return G.relabel(dst, node)
    ones = Pointwise(
        lambda ctx, idx: ctx.full(1 if include_self else 0, dt), shape_of(meta), dt, meta.device, None
    )
    count = G.realize(ones)
    scatter(count, 1, "tl.atomic_add", xn=None)
    out_shape = shape_of(meta)

    def quotient(ctx, idx):
        s, c = dst.load(ctx, idx), count.load(ctx, idx)
        return ctx.op(f"{s} / tl.where({c} == 0, 1.0, {c})")

    return Pointwise(quotient, out_shape, dt, meta.device, node)


@register(aten.scatter_reduce.two)
def _scatter_reduce(G, node, meta, x, dim, ind, src, reduce, *, include_self=True):
    if not isinstance(ind, Value) or ind.dtype not in INDEX_DTYPES or not isinstance(x, Value):
        return None
    if not isinstance(src, Value) or len(src.shape) != len(ind.shape) or not x.shape:
        return None
    dim %= len(x.shape)
    ind = G.use(ind, node)
    return _reduce_into(
        G, node, meta, x, src, index_along(ind, dim, x.shape[dim]), ind.shape, reduce, include_self
    )


@register(aten.index_reduce.default)
def _index_reduce(G, node, meta, x, dim, ind, src, reduce, *, include_self=True):
    """out[..., ind[i], ...] = reduce(out[..., ind[i], ...], src[..., i, ...]) along `dim`."""
    if not isinstance(ind, Value) or ind.dtype not in INDEX_DTYPES or not isinstance(x, Value):
        return None
    if not isinstance(src, Value) or len(src.shape) != len(x.shape):
        return None
    ind = G.use(ind, node)
    if not x.shape:  # 0-d: one position, index 0
        return _reduce_into(G, node, meta, x, src, lambda ctx, idx: [], (), reduce, include_self)
    dim %= len(x.shape)
    size = x.shape[dim]

    def where(ctx, idx):
        return list(idx[:dim]) + [wrap_negative(ctx, ind.load(ctx, [idx[dim]]), size)] + list(idx[dim + 1 :])

    return _reduce_into(G, node, meta, x, src, where, src.shape, reduce, include_self)
