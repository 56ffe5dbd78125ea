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
from fxlens.backend.lowerings import _shape, pointwise, register
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
    shape = _shape(meta)
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

    return Pointwise(fn, _shape(meta), meta.dtype, meta.device, node)
