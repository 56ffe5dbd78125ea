"""Tensors made from nothing: constants (`full`, `zeros_like`, `scalar_tensor`, ...) and iota
(`arange`, `prims.iota`), cheap pointwise values recomputed wherever they are read.
"""

from __future__ import annotations

import sympy
import torch

from fxlens.backend.ir import TL_DTYPE, Pointwise, compute_dtype
from fxlens.backend.kernel_ctx import triton_literal
from fxlens.backend.lower.core import register, shape_of
from fxlens.backend.symbolic import is_static, render

aten = torch.ops.aten
prims = torch.ops.prims


@register(aten.full.default, aten.full_like.default, aten.scalar_tensor.default, aten.zeros_like.default,
          aten.ones_like.default, aten.zeros.default, aten.ones.default, aten.empty_like.default)  # fmt: skip
def _full(G, node, meta, *args, **kwargs):
    t = node.target
    if t in (aten.full.default, aten.full_like.default):
        v = args[1]
    elif t == aten.scalar_tensor.default:
        v = args[0]
    else:
        v = 1 if t in (aten.ones.default, aten.ones_like.default) else 0
    shape, dt = shape_of(meta), meta.dtype
    if isinstance(v, sympy.Expr) and v.is_integer and dt != torch.bool:
        # a size as a value (dynamic=True: scalar_tensor(s0) in group norm's backward): the kernel
        # takes the size symbol as an argument; adding it to zeros of the dtype converts it
        def sym(ctx, idx):
            return ctx.op(f"({render(v)} + tl.full({ctx.block()}, 0, {TL_DTYPE[compute_dtype(dt)]}))")

        return Pointwise(sym, shape, dt, meta.device, node, cheap=True)
    if not isinstance(v, (int, float, bool)):
        return None
    return Pointwise(lambda ctx, idx: ctx.full(v, dt), shape, dt, meta.device, node, cheap=True)


@register(aten.arange.start_step, aten.arange.start, aten.arange.default)
def _arange(G, node, meta, *args, **kwargs):
    nums = [a for a in args if isinstance(a, (int, float)) or not is_static(a)]
    start, step = (0, 1) if len(nums) == 1 else (nums[0], nums[2] if len(nums) > 2 else 1)
    return _iota(meta, node, start, step)


@register(prims.iota.default)
def _prims_iota(G, node, meta, length, *, start, step, dtype, device, requires_grad):
    return _iota(meta, node, start, step)


def _iota(meta, node, start, step):
    dt = meta.dtype

    def fn(ctx, idx):
        i = ctx.index_tensor(idx[0], torch.int64)
        wide = torch.float64 if dt.is_floating_point else torch.int64
        if dt.is_floating_point:
            i = ctx.cast(i, torch.int64, torch.float64)
        return ctx.cast(ctx.op(f"{i} * {triton_literal(step)} + {triton_literal(start)}"), wide, dt)

    return Pointwise(fn, shape_of(meta), dt, meta.device, node, cheap=True)
