"""Indexed stores: index_put (accumulate False/True), scatter_add, and scatter past its unrolled form.

As in inductor, two kernels: a copy of the destination into a fresh buffer, then a kernel over the
update domain (the values' shape) that stores each value at its indexed position, with
`tl.atomic_add` when accumulating. With duplicate indices and accumulate=False some one value wins
(as on CUDA; ATen's CPU loop keeps the last). The scatter kernel is never fused with another one
(its domain is the updates, its writes are indirect): `alone` tells the scheduler.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from fxlens.backend.codegen import SchedNode
from fxlens.backend.ir import (
    TL_DTYPE,
    Buffer,
    Pointwise,
    Value,
    broadcast_index,
    compute_dtype,
    decompose,
    linear,
    numel,
)
from fxlens.backend.lower.core import register, shape_of
from fxlens.backend.lower.views import broadcast_sizes, scatter_unrolled
from fxlens.backend.symbolic import render

aten = torch.ops.aten
INDEX_DTYPES = (torch.int64, torch.int32)
# dtypes tl.atomic_add takes (bf16 fails under the interpreter; narrow ints have no atomics)
_ATOMIC = (torch.float32, torch.float16, torch.float64, torch.int32, torch.int64)


@dataclass(eq=False)
class Scatter(Value):
    """Writes `src` (over the update domain `shape`) into `dst` at `where(ctx, idx)` (per-dim index
    expressions into `dst`); adds atomically when `accumulate`."""

    dst: Buffer
    src: Value | float | int
    where: Callable
    accumulate: bool
    shape: tuple[int, ...]
    dtype: torch.dtype
    device: torch.device
    node: torch.fx.Node
    x_node: torch.fx.Node | None = None  # the destination's FX node (what dst holds before this kernel)

    def emit(self, ctx, sn) -> None:
        ctx.enter(self.node)
        idx = decompose("xindex", self.shape)
        dt = self.dst.dtype
        if isinstance(self.src, Value):
            val = ctx.cast(
                self.src.load(ctx, broadcast_index(idx, self.src.shape, self.shape)), self.src.dtype, dt
            )
        else:
            val = ctx.full(self.src, dt)
        if dt != compute_dtype(dt) or dt == torch.bool:
            val = ctx.op(f"{val}.to({TL_DTYPE[dt]})")
        off = linear(self.where(ctx, idx), self.dst.stride, self.dst.offset)
        root = self.dst.base
        p = ctx.pointer_param(root)
        ctx.loaded.setdefault(root.name, [])  # the copy must be stored: this kernel updates it
        if self.x_node is not None:  # replays (FXLENS_CHECK_KERNELS, _KERNEL_FALLBACK) start from dst
            ctx.boundary[(self.x_node, None)] = self.dst
        fn = "tl.atomic_add" if self.accumulate else "tl.store"
        ctx.emit(f"{fn}({p} + ({off}), {val}, xmask)")
        ctx.written[root.name] = root


@dataclass(eq=False)
class ScatterNode(SchedNode):
    """A scheduled Scatter: its iteration domain is the updates, not the buffer it writes."""

    alone: bool = True

    @property
    def domain(self) -> tuple[int, int]:
        return numel(self.value.shape), 1


def wrap_negative(ctx, v: str, size) -> str:
    return ctx.op(f"tl.where({v} < 0, {v} + {render(size)}, {v})")


def scatter_into(G, node, meta, x, src, where, shape, accumulate: bool):
    """Copy `x` into a fresh buffer, then scatter into it; returns the buffer."""
    if accumulate and meta.dtype not in _ATOMIC:
        return None
    if numel(shape) == 0:
        return None
    x_node = node.args[0] if isinstance(node.args[0], torch.fx.Node) else None
    if x_node is None:
        return None
    x = G.use(x, node)
    # the copy is labelled with x's node: an ATen replay of its kernel (FXLENS_KERNEL_FALLBACK) copies x
    copy = Pointwise(lambda ctx, idx: x.load(ctx, idx), shape_of(meta), meta.dtype, meta.device, x_node)
    dst = G.realize(copy)
    src = G.use(src, node) if isinstance(src, Value) else src
    sc = Scatter(dst, src, where, accumulate, tuple(shape), meta.dtype, meta.device, node, x_node)
    G.items.append(ScatterNode(sc, dst, mutation=True))
    return G.relabel(dst, node)


@register(aten.index_put.default)
def _index_put(G, node, meta, x, indices, values, accumulate=False):
    if not isinstance(x, Value) or not isinstance(values, Value):
        return None
    pos = [i for i, t in enumerate(indices) if t is not None]
    if not pos or pos != list(range(pos[0], pos[-1] + 1)):
        return None  # non-adjacent index tensors move the indexed dims first: leave to ATen
    inds = [indices[i] for i in pos]
    if not all(isinstance(t, Value) and t.dtype in INDEX_DTYPES for t in inds):
        return None  # boolean masks have data-dependent sizes
    inds = [G.use(t, node) for t in inds]
    bshape = broadcast_sizes([t.shape for t in inds])  # torch's meta checked they broadcast
    k, m, nb = pos[0], len(pos), len(bshape)
    shape = tuple(x.shape[:k]) + bshape + tuple(x.shape[k + m :])
    # the values must broadcast to the update domain (not past it): compared as sizes, which may be
    # symbolic (an unequal pair of expressions is treated as not broadcasting: ATen takes it)
    vs = tuple(values.shape)
    if len(vs) > len(shape) or any(v != 1 and v != n for v, n in zip(vs[::-1], shape[::-1])):
        return None
    sizes = x.shape

    def where(ctx, idx):
        bidx = idx[k : k + nb]
        vs = [
            wrap_negative(ctx, t.load(ctx, broadcast_index(bidx, t.shape, bshape)), sizes[k + j])
            for j, t in enumerate(inds)
        ]
        return list(idx[:k]) + vs + list(idx[k + nb :])

    return scatter_into(G, node, meta, x, values, where, shape, bool(accumulate))


def index_along(ind, dim, size):
    def where(ctx, idx):
        return list(idx[:dim]) + [wrap_negative(ctx, ind.load(ctx, idx), size)] + list(idx[dim + 1 :])

    return where


@register(aten.scatter_add.default)
def _scatter_add(G, node, meta, x, dim, ind, src):
    if not isinstance(x, Value) or not isinstance(ind, Value) or ind.dtype not in INDEX_DTYPES:
        return None
    if not isinstance(src, Value) or len(src.shape) != len(ind.shape):
        return None
    dim %= max(len(x.shape), 1)
    ind = G.use(ind, node)
    return scatter_into(G, node, meta, x, src, index_along(ind, dim, x.shape[dim]), ind.shape, True)


@register(aten.scatter.value, aten.scatter.src)
def _scatter_any(G, node, meta, x, dim, ind, src):
    """Small index extents keep the unrolled pointwise form (deterministic, fusable); larger ones
    store through the index."""
    out = scatter_unrolled(G, node, meta, x, dim, ind, src)
    if out is not None:
        return out
    if not isinstance(x, Value) or not isinstance(ind, Value) or ind.dtype not in INDEX_DTYPES:
        return None
    if isinstance(src, Value) and len(src.shape) != len(ind.shape):
        return None
    dim %= max(len(x.shape), 1)
    ind = G.use(ind, node)
    return scatter_into(G, node, meta, x, src, index_along(ind, dim, x.shape[dim]), ind.shape, False)
