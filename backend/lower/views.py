"""View, concatenation and gather lowerings: index remapping, never copies.

Views of realized buffers become strided reinterpretations (see `GraphLowering.view`); views of
lazy values remap the index (`view_remap`). Gathers load an index tensor and use its value as an
index into the source (negative indices wrapped).
"""

from __future__ import annotations

import torch

from fxlens.backend.ir import (
    Pointwise,
    Value,
    broadcast_index,
    contiguous_strides,
    decompose,
    linear,
    numel,
)
from fxlens.backend.lower.core import register, shape_of
from fxlens.backend.symbolic import is_static, render, size

aten = torch.ops.aten


# --- views: index remapping, no copies ---------------------------------------------------------
def reshape_remap(in_shape, out_shape):
    a = [s for s in in_shape if s != 1]
    b = [s for s in out_shape if s != 1]
    if a == b:  # only size-1 dims inserted/removed

        def remap(idx):
            it = iter([i for i, s in zip(idx, out_shape, strict=True) if s != 1])
            return ["0" if s == 1 else next(it) for s in in_shape]

        return remap

    def remap(idx):
        lin = linear(idx, contiguous_strides(out_shape))
        return decompose(f"({lin})", in_shape)

    return remap


def view_remap(node, x, meta, args):
    t, ins, outs = node.target, x.shape, shape_of(meta)
    if t in (aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten.squeeze.dim,
             aten.squeeze.dims, aten.squeeze.default, aten.unsqueeze.default, aten.expand.default,
             aten.view.dtype) and t != aten.view.dtype:  # fmt: skip
        if t == aten.expand.default:
            return lambda idx: broadcast_index(idx, ins, outs)
        return reshape_remap(ins, outs)
    if t == aten.permute.default:
        dims = [d % len(ins) for d in args[0]]

        def remap(idx):
            out = [None] * len(ins)
            for i, d in enumerate(dims):
                out[d] = idx[i]
            return out

        return remap
    if t in (aten.t.default, aten.transpose.int):
        d0, d1 = (0, 1) if t == aten.t.default else (args[0] % len(ins), args[1] % len(ins))
        if len(ins) < 2:
            return lambda idx: list(idx)

        def remap(idx):
            idx = list(idx)
            idx[d0], idx[d1] = idx[d1], idx[d0]
            return idx

        return remap
    if t == aten.slice.Tensor:
        dim = (args[0] if args else 0) % len(ins)
        start = args[1] if len(args) > 1 and args[1] is not None else 0
        step = args[3] if len(args) > 3 else 1
        if is_static(start, ins[dim]):
            start = max(0, min(start + ins[dim] if start < 0 else start, ins[dim]))
        elif is_static(start) and start < 0:
            start = start + ins[dim]  # symbolic: torch's meta already checked the bounds
        if not isinstance(step, int):
            return None

        def remap(idx):
            idx = list(idx)
            idx[dim] = f"({render(start)} + {step} * {idx[dim]})" if (start != 0 or step != 1) else idx[dim]
            return idx

        return remap
    if t == aten.select.int:
        dim, i = args[0] % len(ins), args[1]
        if is_static(i, ins[dim]):
            i %= ins[dim]
        elif is_static(i) and i < 0:
            i = i + ins[dim]
        return lambda idx: list(idx[:dim]) + [render(i)] + list(idx[dim:])
    return None


VIEW_OPS = [
    aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten.squeeze.dim,
    aten.squeeze.dims, aten.squeeze.default, aten.unsqueeze.default, aten.expand.default,
    aten.permute.default, aten.t.default, aten.transpose.int, aten.slice.Tensor, aten.select.int,
    aten.as_strided.default,
]  # fmt: skip


@register(*VIEW_OPS)
def _view(G, node, meta, x, *args):
    if not isinstance(x, Value):
        return None
    return G.view(node, meta, x, args, view_remap(node, x, meta, args))


@register(aten.split_with_sizes.default, aten.split.Tensor)
def _split(G, node, meta, x, sizes, dim=0):
    dim %= len(x.shape)
    out, start = [], 0
    for m in meta:
        n = size(m.shape[dim])
        out.append(G.slice(node, m, x, dim, start, start + n))
        start += n
    return tuple(out)


@register(aten.cat.default)
def _cat(G, node, meta, xs, dim=0):
    xs = [G.use(x, node) for x in xs if isinstance(x, Value) and numel(x.shape) > 0]
    if not xs or len(xs) > 16:
        return None
    shape, dt = shape_of(meta), meta.dtype
    dim %= len(shape)
    offs, o = [], 0
    for x in xs:
        offs.append(o)
        o += x.shape[dim]

    def fn(ctx, idx):
        res = None
        for j in range(len(xs) - 1, -1, -1):
            x, off = xs[j], offs[j]
            i = list(idx)
            i[dim] = f"tl.minimum(tl.maximum({idx[dim]} - {render(off)}, 0), {render(x.shape[dim] - 1)})"
            v = ctx.cast(x.load(ctx, i), x.dtype, dt)
            res = v if res is None else ctx.op(f"tl.where({idx[dim]} < {render(offs[j + 1])}, {v}, {res})")
        return res

    return Pointwise(fn, shape, dt, meta.device, node)


@register(aten.constant_pad_nd.default)
def _constant_pad(G, node, meta, x, pad, value=0):
    """F.pad(mode="constant"): out[i] = x[i - lo] where that is inside x, else `value`; negative pads
    crop. One masked pointwise read (torch's decomposition of it mutates: prims.copy_to)."""
    if not isinstance(x, Value) or len(pad) % 2 or len(pad) // 2 > len(x.shape):
        return None
    x = G.use(x, node)
    shape, dt = shape_of(meta), meta.dtype
    nd = len(shape)
    lows = {nd - 1 - k: size(pad[2 * k]) for k in range(len(pad) // 2)}  # pad pairs from the last dim

    def fn(ctx, idx):
        i, inside = list(idx), []
        for d, lo in lows.items():
            src = f"({idx[d]} - ({render(lo)}))"
            i[d] = f"tl.minimum(tl.maximum({src}, 0), {render(x.shape[d] - 1)})"
            inside.append(f"({src} >= 0) & ({src} < {render(x.shape[d])})")
        v = ctx.cast(x.load(ctx, i), x.dtype, dt)
        if not inside:
            return v
        return ctx.op(f"tl.where({' & '.join(inside)}, {v}, {ctx.full(value, dt)})")

    return Pointwise(fn, shape, dt, meta.device, node)


@register(aten.as_strided_scatter.default)
def _as_strided_scatter(G, node, meta, x, src, size, stride, storage_offset=None):
    """The case autograd emits for as_strided's backward when the view is the whole of a contiguous
    `x` (Swin's pooled output): the result is `src`, reshaped. Other views stay ATen calls."""
    if not isinstance(x, Value) or not isinstance(src, Value) or not is_static(*x.shape, *size, *stride):
        return None
    whole = numel(size) == numel(x.shape) and not storage_offset
    dense = tuple(meta.stride()) == contiguous_strides(shape_of(meta))  # storage order is index order
    if not whole or not dense or tuple(stride) != contiguous_strides(size) or shape_of(meta) != tuple(x.shape):
        return None
    src, remap = G.use(src, node), reshape_remap(tuple(src.shape), tuple(x.shape))  # out idx -> src idx
    return Pointwise(lambda ctx, idx: src.load(ctx, remap(idx)), shape_of(meta), meta.dtype, meta.device, node)


# --- gathers ------------------------------------------------------------------------------------
def _wrap(ctx, v, n):
    return ctx.op(f"tl.where({v} < 0, {v} + {render(n)}, {v})")


@register(aten.embedding.default)
def _embedding(G, node, meta, w, ind, *args):
    return _index_dim(G, node, meta, w, 0, ind, prefix=True)


@register(aten.index_select.default)
def _index_select(G, node, meta, x, dim, ind):
    return _index_dim(G, node, meta, x, dim % max(len(x.shape), 1), ind, prefix=False)


def _index_dim(G, node, meta, x, dim, ind, prefix):
    if not isinstance(x, Value) or not isinstance(ind, Value) or ind.dtype not in (torch.int64, torch.int32):
        return None
    x, ind = G.use(x, node), G.use(ind, node)
    shape = shape_of(meta)
    if not x.shape:  # a 0-d source: the only valid index is 0 (or -1), so every element is x
        return Pointwise(lambda ctx, idx: x.load(ctx, []), shape, meta.dtype, meta.device, node)
    k = len(ind.shape) if prefix else 1

    def fn(ctx, idx):
        i = _wrap(ctx, ind.load(ctx, idx[:k] if prefix else [idx[dim]] if ind.shape else []), x.shape[dim])
        src = [i] + list(idx[k:]) if prefix else list(idx[:dim]) + [i] + list(idx[dim + 1 :])
        return x.load(ctx, src)

    return Pointwise(fn, shape, meta.dtype, meta.device, node)


@register(aten.gather.default)
def _gather(G, node, meta, x, dim, ind, sparse_grad=False):
    if not isinstance(ind, Value) or not isinstance(x, Value):
        return None
    x, ind = G.use(x, node), G.use(ind, node)
    dim %= max(len(x.shape), 1)
    if not x.shape:  # a 0-d source: the only valid index is 0 (or -1), so every element is x
        return Pointwise(lambda ctx, idx: x.load(ctx, []), shape_of(meta), meta.dtype, meta.device, node)

    def fn(ctx, idx):
        i = _wrap(ctx, ind.load(ctx, idx), x.shape[dim])
        return x.load(ctx, list(idx[:dim]) + [i] + list(idx[dim + 1 :]))

    return Pointwise(fn, shape_of(meta), meta.dtype, meta.device, node)


def broadcast_sizes(shapes) -> tuple:
    """torch.broadcast_shapes for sizes that may be symbolic (torch's meta already checked them)."""
    nd = max(len(s) for s in shapes)
    out = [1] * nd
    for s in shapes:
        for d, n in enumerate(s, nd - len(s)):
            if n != 1:
                out[d] = n
    return tuple(out)


@register(aten.index.Tensor)
def _index(G, node, meta, x, indices):
    pos = [i for i, t in enumerate(indices) if t is not None]
    if not pos or pos != list(range(pos[0], pos[-1] + 1)):
        return None
    inds = [indices[i] for i in pos]
    if not all(isinstance(t, Value) and t.dtype in (torch.int64, torch.int32) for t in inds):
        return None
    x = G.use(x, node)
    inds = [G.use(t, node) for t in inds]
    bshape = broadcast_sizes([t.shape for t in inds])
    k, m = pos[0], len(pos)
    shape = shape_of(meta)
    if shape != tuple(x.shape[:k]) + bshape + tuple(x.shape[k + m :]):
        return None
    nb = len(bshape)

    def fn(ctx, idx):
        bidx = idx[k : k + nb]
        vs = [
            _wrap(ctx, t.load(ctx, broadcast_index(bidx, t.shape, bshape)), x.shape[k + j])
            for j, t in enumerate(inds)
        ]
        return x.load(ctx, list(idx[:k]) + vs + list(idx[k + nb :]))

    return Pointwise(fn, shape, meta.dtype, meta.device, node)


@register(aten.scatter.value, aten.scatter.src)
def scatter_unrolled(G, node, meta, x, dim, ind, src):
    """out = x with out[..., ind[..., j, ...], ...] = src along `dim`; unrolled over ind's extent there."""
    if not isinstance(x, Value) or not isinstance(ind, Value) or ind.dtype not in (torch.int64, torch.int32):
        return None
    if not x.shape or len(ind.shape) != len(x.shape):  # 0-d: ATen's scatter (no row to unroll)
        return None
    dim %= len(x.shape)
    k = ind.shape[dim]
    # the row may have a symbolic length (the wrap of negative indices is emitted with its symbol)
    if not is_static(k) or k > 8 or any(ind.shape[d] != x.shape[d] for d in range(len(x.shape)) if d != dim) or (
            isinstance(src, Value) and tuple(src.shape) != tuple(ind.shape)):  # fmt: skip
        return None
    x, ind = G.use(x, node), G.use(ind, node)
    src = G.use(src, node) if isinstance(src, Value) else src
    dt = meta.dtype

    def fn(ctx, idx):
        res = ctx.cast(x.load(ctx, idx), x.dtype, dt)
        for j in range(k):  # later index positions win, as in ATen's serial CPU loop
            at = list(idx[:dim]) + [str(j)] + list(idx[dim + 1 :])
            raw = ind.load(ctx, at)
            i = ctx.op(f"tl.where({raw} < 0, {raw} + {render(x.shape[dim])}, {raw})")
            v = ctx.cast(src.load(ctx, at), src.dtype, dt) if isinstance(src, Value) else ctx.full(src, dt)
            res = ctx.op(f"tl.where({i} == {idx[dim]}, {v}, {res})")
        return res

    return Pointwise(fn, shape_of(meta), dt, meta.device, node)
