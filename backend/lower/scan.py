"""Prefix scans (cumsum, cumprod) along any dim, as reduction-shaped kernels.

A scan has a reduction's iteration domain (rows = every dim but the scanned one, `rindex` along it)
but stores every element: `tl.associative_scan` over the row when the row fits one block
(persistent), else one loop over blocks of the row that carries the running total across blocks.
The scheduler treats it like a reduction over the same rows, so a pointwise epilogue over the full
domain and reductions over the same rows can share its kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from fxlens.backend.ir import TL_DTYPE, Pointwise, Reduction, Value, compute_dtype, full_index
from fxlens.backend.lower.core import pointwise, register, shape_of
from fxlens.backend.symbolic import is_static, render

aten = torch.ops.aten

_COMBINE = {"cumsum": ("_sum_c", "+", 0), "cumprod": ("_prod_c", "*", 1)}  # helper, operator, identity


@dataclass(eq=False)
class Scan(Reduction):
    """`rtype` in {cumsum, cumprod} over the one dim in `rdims`; `shape` is the full domain."""

    def emit(self, ctx, sn) -> None:
        fn, op, ident = _COMBINE[self.rtype]
        acc_dt = compute_dtype(self.dtype)
        ctx.enter(self.node)
        idx = full_index(self.full, self.rdims)
        saved = None
        if not ctx.persistent:
            carry = f"carry{ctx.n}"
            ctx.n += 1
            ctx.emit(f"{carry} = tl.full([XBLOCK, 1], {ident}, {TL_DTYPE[acc_dt]})")
            saved = ctx.open_loop()
        ctx.level = "r"
        v = ctx.cast(self.src.load(ctx, idx), self.src.dtype, acc_dt)
        v = ctx.op(f"tl.where(xrmask, {v}, {ident})")  # identity past the row's end
        res = ctx.op(f"tl.associative_scan({v}, 1, {fn})")
        if saved is not None:
            res = ctx.op(f"{res} {op} {carry}")
            ctx.store(sn, idx, res, acc_dt)
            ctx.emit(f"{carry} = {carry} {op} tl.reduce({v}, 1, {fn})[:, None]")
            ctx.close_loop(saved)
            ctx.cse = {}
        else:
            ctx.store(sn, idx, res, acc_dt)
        ctx.level = "x"


@register(aten.cumsum.default, aten.cumprod.default)
def _scan(G, node, meta, x, dim, *, dtype=None):
    if not isinstance(x, Value) or meta.dtype == torch.bool or meta.dtype.is_complex:
        return None
    rtype = "cumsum" if node.target == aten.cumsum.default else "cumprod"
    shape = shape_of(meta)
    if not shape or shape[dim % len(shape)] == 1:  # a scan over one element is a cast
        return pointwise(G, node, meta, [x], lambda v: v, compute=x.dtype)
    x = G.use(x, node)
    d = dim % len(shape)
    return G.realize(Scan(x, rtype, (d,), True, shape, meta.dtype, meta.device, node))


@register(aten.flip.default)
def _flip(G, node, meta, x, dims):
    """flip (cumsum's backward: flip, cumsum, flip) as an index remapping."""
    if not isinstance(x, Value):
        return None
    x = G.use(x, node)
    shape = x.shape
    ds = {d % len(shape) for d in dims} if shape else set()

    def flipped(n, i):  # (n - 1) - i; a symbolic n is >= 2 (Dynamo specializes sizes 0 and 1)
        return i if is_static(n) and n <= 1 else f"({render(n - 1)} - {i})"

    def fn(ctx, idx):
        return x.load(ctx, [flipped(shape[d], i) if d in ds else i for d, i in enumerate(idx)])

    return Pointwise(fn, shape_of(meta), meta.dtype, meta.device, node)


# --- scans with their own combine functions (persistent rows only) ------------------------------
_CUM_HELPERS = """
@triton.jit
def _fx_cummax_c(a, ai, b, bi):
    # torch's rule: a later element wins if it is NaN, or if the running value is not NaN and the
    # element is >= it; so a segment's summary is its last NaN, else its last maximum (associative)
    take = (b != b) | ((a == a) & (b >= a))
    return tl.where(take, b, a), tl.where(take, bi, ai)


@triton.jit
def _fx_cummin_c(a, ai, b, bi):
    take = (b != b) | ((a == a) & (b <= a))
    return tl.where(take, b, a), tl.where(take, bi, ai)


@triton.jit
def _fx_lse_c(a, b):
    # log(exp(a) + exp(b)) = max + log(1 + exp(min - max)); equal infinities have no difference
    hi = tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)
    lo = tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)
    r = hi + tl.log(1.0 + tl.exp(lo - hi))
    return tl.where(hi == lo, tl.where(hi == hi, hi + 0.6931471805599453, hi), r)
"""


@dataclass(eq=False)
class CumScan(Reduction):
    """cummax/cummin (stores the running extreme's index, int64) or logcumsumexp (stores the value,
    accumulated in fp64) along `rdims[0]`, the whole row in one block."""

    def emit(self, ctx, sn) -> None:
        from fxlens.backend.kernel_ctx import Incompatible

        if not ctx.persistent:
            raise Incompatible("this scan needs its whole row in one block")
        ctx.enter(self.node)
        ctx.helpers["_fx_cum"] = _CUM_HELPERS
        idx = full_index(self.full, self.rdims)
        ctx.level = "r"
        v = self.src.load(ctx, idx)
        if self.rtype == "logcumsumexp":
            v = ctx.op(f"tl.where(xrmask, {v}.to(tl.float64), float('-inf'))")
            res = ctx.op(f"tl.associative_scan({v}, 1, _fx_lse_c)")
            ctx.store(sn, idx, res, torch.float64)
        else:
            ri = ctx.op("tl.broadcast_to(rindex, [XBLOCK, RBLOCK]).to(tl.int64)")
            res = ctx.op(f"tl.associative_scan(({v}, {ri}), 1, _fx_{self.rtype}_c)[1]")
            ctx.store(sn, idx, ctx.op(f"tl.where(xrmask, {res}, 0)"), torch.int64)  # in-bounds gathers
        ctx.level = "x"


def _cum_row(x, dim, meta):
    from fxlens.backend import config

    if not isinstance(x, Value) or not x.shape or not is_static(*x.shape) or meta.dtype.is_complex:
        return None
    d = dim % len(x.shape)
    return d if x.shape[d] <= config.persistent_rmax() else None


@register(aten.cummax.default, aten.cummin.default)
def _cummax(G, node, meta, x, dim):
    d = _cum_row(x, dim, meta[0])
    if d is None:
        return None
    x = G.use(x, node)
    kind = "cummax" if node.target == aten.cummax.default else "cummin"
    ind = G.realize(CumScan(x, kind, (d,), True, tuple(x.shape), torch.int64, x.device, node, item=1))

    def value(ctx, idx):
        i = list(idx)
        i[d] = ind.load(ctx, idx)
        return x.load(ctx, i)

    vals = Pointwise(value, tuple(x.shape), x.dtype, x.device, node)
    vals.item = 0
    return vals, ind


@register(aten.logcumsumexp.default)
def _logcumsumexp(G, node, meta, x, dim):
    d = _cum_row(x, dim, meta)
    if d is None or not meta.dtype.is_floating_point:
        return None
    x = G.use(x, node)
    return G.realize(CumScan(x, "logcumsumexp", (d,), True, shape_of(meta), meta.dtype, meta.device, node))
