"""Division with rounding, as torch defines it for negative operands: div(rounding_mode='floor'/
'trunc'), floor_divide, remainder and fmod, on integer and floating tensors.

Integers: C (and Triton on the GPU) truncates `//`, numpy (the interpreter) floors it; both agree on
non-negative operands. So the quotient is taken of absolute values and signed afterwards:

    t = sign(a) * sign(b) * (|a| // |b|)     trunc division       r = a - t * b      fmod
    floor = t - 1   and   remainder = r + b   where r != 0 and sign(r) != sign(b)

Floats follow ATen's div_floor_floating: the quotient comes from an exact fmod (`%` on floats is
fmod on the GPU and in the interpreter), `(a - fmod(a, b)) / b`, stepped and rounded, so a = 3 * b
gives 3 even when a / b rounds to 2.9999998. Division by zero: floats give IEEE results as torch
does; integers are undefined here (torch's CPU raises, CUDA returns garbage); INT_MIN / -1 wraps.
"""

from __future__ import annotations

import torch

from fxlens.backend.ir import TL_DTYPE, Pointwise, Value, broadcast_index, compute_dtype
from fxlens.backend.lower.core import pointwise, register, shape_of

aten = torch.ops.aten


def _int_body(kind, ctx, x, y, dt):
    ax, ay = ctx.op(f"tl.abs({x})"), ctx.op(f"tl.abs({y})")
    q = ctx.op(f"{ax} // tl.where({ay} == 0, 1, {ay})")  # /0 undefined; masked lanes load 0
    t = ctx.op(f"tl.where(({x} < 0) != ({y} < 0), -{q}, {q})")
    if kind == "trunc":
        return t
    r = ctx.op(f"{x} - {t} * {y}")
    if kind == "fmod":
        return r
    adjust = ctx.op(f"({r} != 0) & (({r} < 0) != ({y} < 0))")
    if kind == "floor":
        return ctx.op(f"tl.where({adjust}, {t} - 1, {t})")
    return ctx.op(f"tl.where({adjust}, {r} + {y}, {r})")


def _float_body(kind, ctx, x, y, dt):
    if kind == "trunc":
        # IEEE division: fp32 `/` is approximate on the GPU (fp64 `/` is exact, and div_rn is fp32 only)
        d = ctx.op(f"tl.math.div_rn({x}, {y})" if compute_dtype(dt) == torch.float32 else f"{x} / {y}")
        if dt != compute_dtype(dt):  # eager rounds the quotient to fp16/bf16 before truncating it
            d = ctx.op(f"{d}.to({TL_DTYPE[dt]}).to(tl.float32)")
        return ctx.op(f"tl.where({d} < 0, tl.ceil({d}), tl.floor({d}))")
    mod = ctx.op(f"{x} % {y}")
    if kind == "fmod":
        return mod
    adjust = ctx.op(f"({mod} != 0) & (({y} < 0) != ({mod} < 0))")
    if kind == "remainder":
        return ctx.op(f"tl.where({adjust}, {mod} + {y}, {mod})")
    div = ctx.op(f"({x} - {mod}) / {y}")  # near an integer; rounded below, so `/` may be approximate
    div = ctx.op(f"tl.where({adjust}, {div} - 1.0, {div})")
    fl = ctx.op(f"tl.floor({div})")
    fl = ctx.op(f"tl.where({div} - {fl} > 0.5, {fl} + 1.0, {fl})")
    fl = ctx.op(f"tl.where({div} == 0, 0.0 * ({x} / {y}), {fl})")  # keeps the sign of zero
    return ctx.op(f"tl.where({y} == 0, {x} / {y}, {fl})")


def _rounding(G, node, meta, a, b, kind):
    dt = meta.dtype
    vals = [G.use(v, node) if isinstance(v, Value) else v for v in (a, b)]
    if dt == torch.bool or dt.is_complex or not any(isinstance(v, Value) for v in vals):
        return None
    if any(isinstance(v, Value) and v.dtype == torch.bool for v in vals):
        return None
    shape, cdt = shape_of(meta), compute_dtype(dt)
    body = _float_body if dt.is_floating_point else _int_body

    def fn(ctx, idx):
        xs = []
        for v in vals:
            if isinstance(v, Value):
                xs.append(ctx.cast(v.load(ctx, broadcast_index(idx, v.shape, shape)), v.dtype, cdt))
            else:  # a tensor, not a literal: tl.abs and comparisons need one
                xs.append(ctx.full(float(v) if dt.is_floating_point else int(v), cdt))
        return ctx.cast(body(kind, ctx, *xs, dt), cdt, dt)

    return Pointwise(fn, shape, dt, meta.device, node)


@register(aten.div.Tensor_mode, aten.div.Scalar_mode)
def _div_rounding(G, node, meta, a, b, rounding_mode=None):
    if rounding_mode is None:
        if not meta.dtype.is_floating_point:
            return None
        return pointwise(G, node, meta, [a, b], lambda x, y: f"{x} / {y}")
    return _rounding(G, node, meta, a, b, rounding_mode)


@register(aten.floor_divide.default, aten.floor_divide.Scalar)
def _floor_divide(G, node, meta, a, b):
    return _rounding(G, node, meta, a, b, "floor")


@register(aten.remainder.Tensor, aten.remainder.Scalar, aten.fmod.Tensor, aten.fmod.Scalar)
def _remainder_fmod(G, node, meta, a, b):
    kind = "remainder" if node.target in (aten.remainder.Tensor, aten.remainder.Scalar) else "fmod"
    return _rounding(G, node, meta, a, b, kind)
