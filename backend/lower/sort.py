"""Sorting along a dim: sort (argsort, msort), topk, kthvalue, median, nanmedian.

One kernel per sort computes the permutation of each row, `perm` (int64, the full domain), with a
bitonic network over the row held in one block (rows up to FXLENS_PERSISTENT_RMAX elements; longer
ones stay ATen calls). Triton's own `tl.sort` is a stdlib `@jit` function, which the interpreter
cannot call from a kernel module loaded with the interpret knob (TRITON-NOTES.md), so the network is
written out here (the same compare-and-swap stages as `tl.sort`). Each element's key packs an
order-preserving integer of its value (NaN canonical and last, -0.0 == 0.0, as in torch) above its
index, so equal values keep their order: a stable sort, as `torch.sort(stable=True)`, and unique
keys, so values and indices always agree. Values are then a gather of the input through `perm`;
topk/kthvalue/median pick positions of it. torch does not promise which index wins a tie in topk,
kthvalue or median (its CPU kernels are not stable there), so for ties only values are comparable.
fp64 and int64 values (no room for the index in 64 bits) stay ATen calls.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton

from fxlens.backend import config
from fxlens.backend.ir import Pointwise, Reduction, Value, compute_dtype, full_index
from fxlens.backend.kernel_ctx import Incompatible
from fxlens.backend.lower.core import MetaLike, reduction, register, shape_of
from fxlens.backend.symbolic import is_static

aten = torch.ops.aten

# A bitonic sort of the last axis of a [XBLOCK, 2**n] block, ascending (as triton.language.standard).
_BITONIC = """
@triton.jit
def _fx_cas(x, flip, i: tl.constexpr, n_dims: tl.constexpr):
    n_outer: tl.constexpr = x.numel >> n_dims
    shape: tl.constexpr = [n_outer * 2**i, 2, 2 ** (n_dims - i - 1)]
    y = tl.reshape(x, shape)
    m = tl.arange(0, 2)[None, :, None]
    left = tl.reshape(tl.broadcast_to(tl.reduce(y * (1 - m), 1, _sum_c)[:, None, :], shape), x.shape)
    right = tl.reshape(tl.broadcast_to(tl.reduce(y * m, 1, _sum_c)[:, None, :], shape), x.shape)
    swap = (left > right) != flip
    return x ^ tl.where(swap, left ^ right, 0)


@triton.jit
def _fx_merge(x, stage: tl.constexpr, order: tl.constexpr, n_dims: tl.constexpr):
    n_outer: tl.constexpr = x.numel >> n_dims
    if order == 2:
        shape: tl.constexpr = [n_outer * 2 ** (n_dims - 1 - stage), 2, 2**stage]
        flip = tl.reshape(tl.broadcast_to(tl.arange(0, 2)[None, :, None], shape), x.shape)
    else:
        flip = order
    for i in tl.static_range(stage):
        x = _fx_cas(x, flip, i + (n_dims - stage), n_dims)
    return x


@triton.jit
def _fx_sort(x, n_dims: tl.constexpr):
    for i in tl.static_range(1, n_dims + 1):
        x = _fx_merge(x, i, 2 if i < n_dims else 0, n_dims)
    return x
"""

_KEY_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.int16, torch.int8,
               torch.uint8, torch.bool)  # fmt: skip  # values whose order fits 32 bits


@dataclass(eq=False)
class Sort(Reduction):
    """The stable sorting permutation (int64) of each row of `src` along `rdims[0]`."""

    descending: bool = False

    def emit(self, ctx, sn) -> None:
        if not ctx.persistent:
            raise Incompatible("a sort needs its whole row in one block")
        ctx.enter(self.node)
        ctx.helpers["_fx_sort"] = _BITONIC
        idx = full_index(self.full, self.rdims)
        ctx.level = "r"
        src_dt = compute_dtype(self.src.dtype)
        v = self.src.load(ctx, idx)
        if self.src.dtype.is_floating_point:
            v = ctx.cast(v, self.src.dtype, torch.float32)
            v = ctx.op(f'tl.where({v} != {v}, float("nan"), {v}) + 0.0')  # one NaN; -0.0 -> 0.0
            b = ctx.op(f"{v}.to(tl.int32, bitcast=True)")
            k = ctx.op(f"{b} ^ (({b} >> 31) & 0x7FFFFFFF)")  # IEEE order as signed integers
        else:
            k = ctx.op(f"{v}.to(tl.int32)") if src_dt != torch.int32 else v
        if self.descending:
            k = ctx.op(f"~{k}")
        ri = ctx.op("tl.broadcast_to(rindex, [XBLOCK, RBLOCK]).to(tl.int64)")
        key = ctx.op(f"tl.where(xrmask, ({k}.to(tl.int64) << 32) + {ri}, 0x7FFFFFFFFFFFFFFF)")
        n = triton.next_power_of_2(self.rnumel).bit_length() - 1
        s = ctx.op(f"_fx_sort({key}, {n})")
        # lanes past the row hold no element: index 0 there, so gathers through perm stay in bounds
        perm = ctx.op(f"tl.where(xrmask, {s} - (({s} >> 32) << 32), 0)")
        ctx.store(sn, idx, perm, torch.int64)
        ctx.level = "x"


def _perm(G, node, x: Value, dim: int, descending: bool):
    """The realized permutation buffer, or None where this module does not sort."""
    if not isinstance(x, Value) or x.dtype not in _KEY_DTYPES or not x.shape:
        return None
    d = dim % len(x.shape)
    n = x.shape[d]
    if not is_static(*x.shape) or n > config.persistent_rmax() or n < 1:
        return None
    x = G.use(x, node)
    s = Sort(x, "sort", (d,), True, tuple(x.shape), torch.int64, x.device, node, descending=descending)
    return G.realize(s), x


def _pick(node, x, perm, out_shape, dim, pos, keepdim=True, dtype=None):
    """(values, indices) at positions `pos(ctx, idx)` of each sorted row (idx over `out_shape`)."""
    d = dim

    def full_idx(idx):
        return list(idx) if keepdim else list(idx[:d]) + ["0"] + list(idx[d:])

    def index(ctx, idx):
        i = full_idx(idx)
        i[d] = pos(ctx, idx, i[d])
        return perm.load(ctx, i)

    def value(ctx, idx):
        i = full_idx(idx)
        i[d] = index(ctx, idx)
        return x.load(ctx, i)

    vals = Pointwise(value, tuple(out_shape), x.dtype, x.device, node)
    inds = Pointwise(index, tuple(out_shape), torch.int64, x.device, node)
    vals.item, inds.item = 0, 1
    return vals, inds


@register(aten.sort.default, aten.sort.stable)
def _sort(G, node, meta, x, *args, **kwargs):
    if node.target == aten.sort.stable:
        dim, descending = kwargs.get("dim", -1), kwargs.get("descending", False)
    else:
        dim = args[0] if args else kwargs.get("dim", -1)
        descending = args[1] if len(args) > 1 else kwargs.get("descending", False)
    got = _perm(G, node, x, dim, descending)
    if got is None:
        return None
    perm, x = got
    return _pick(node, x, perm, x.shape, dim % len(x.shape), lambda ctx, idx, i: i)


@register(aten.topk.default)
def _topk(G, node, meta, x, k, dim=-1, largest=True, sorted=True):
    got = _perm(G, node, x, dim, largest)
    if got is None:
        return None
    perm, x = got
    return _pick(node, x, perm, shape_of(meta[0]), dim % len(x.shape), lambda ctx, idx, i: i)


@register(aten.kthvalue.default)
def _kthvalue(G, node, meta, x, k, dim=-1, keepdim=False):
    got = _perm(G, node, x, dim, False)
    if got is None:
        return None
    perm, x = got
    return _pick(node, x, perm, shape_of(meta[0]), dim % len(x.shape), lambda ctx, idx, i: str(k - 1), keepdim)


def _median(G, node, meta, x, dim, keepdim, nan_skip: bool):
    """The lower median; NaN rows give NaN at the first NaN (median) or are skipped (nanmedian)."""
    got = _perm(G, node, x, dim, False)
    if got is None:
        return None
    perm, x = got
    d = dim % len(x.shape)
    n = x.shape[d]
    if x.dtype.is_floating_point:

        def nan(ctx, idx):
            v = x.load(ctx, idx)
            return ctx.op(f"({v} != {v})")

        isnan = Pointwise(nan, x.shape, torch.bool, x.device, None)
        cnt = reduction(G, None, MetaLike(_keep(x.shape, d), torch.int64, x.device), isnan, [d], "sum", True,
                        src_dtype=torch.int64)  # fmt: skip
    else:
        cnt = None

    def pos(ctx, idx, i):
        if cnt is None:
            return str((n - 1) // 2)
        full = list(idx) if keepdim else list(idx[:d]) + ["0"] + list(idx[d:])
        full[d] = "0"
        c = cnt.load(ctx, full)
        if nan_skip:
            return ctx.op(f"tl.maximum(({n} - {c} - 1) // 2, 0)")
        return ctx.op(f"tl.where({c} > 0, {n} - {c}, {(n - 1) // 2})")

    m = meta[0] if isinstance(meta, (tuple, list)) else meta
    return _pick(node, x, perm, shape_of(m), d, pos, keepdim)


def _keep(shape, d):
    return tuple(1 if i == d else s for i, s in enumerate(shape))


@register(aten.median.dim, aten.nanmedian.dim)
def _median_dim(G, node, meta, x, dim, keepdim=False):
    return _median(G, node, meta, x, dim, keepdim, node.target == aten.nanmedian.dim)


@register(aten.median.default, aten.nanmedian.default)
def _median_all(G, node, meta, x):
    """Over every element: the median of the flattened tensor (values only)."""
    if not isinstance(x, Value) or not is_static(*x.shape):
        return None
    from fxlens.backend.lower.views import reshape_remap

    n = 1
    for s in x.shape:
        n *= s
    src = G.use(x, node)
    remap = reshape_remap(tuple(src.shape), (n,))
    flat = Pointwise(lambda ctx, idx: src.load(ctx, remap([idx[-1]])), (1, n), x.dtype, x.device, None)
    out = _median(
        G, node, [MetaLike((1,), x.dtype, x.device)], flat, 1, False, node.target == aten.nanmedian.default
    )
    if out is None:
        return None
    vals = out[0]
    return Pointwise(lambda ctx, idx: vals.load(ctx, ["0"]), (), x.dtype, x.device, node)
