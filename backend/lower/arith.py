"""Elementwise ops with a direct Triton expression: arithmetic, comparisons, powers, clamps,
`where`, and the casts and copies (an identity expression with a dtype change).
"""

from __future__ import annotations

import math

import torch

from fxlens.backend.ir import Pointwise, Value, broadcast_index, compute_dtype
from fxlens.backend.kernel_ctx import triton_literal
from fxlens.backend.lower.core import (
    LOWERINGS,
    libdevice_form,
    pointwise,
    promoted_dtype,
    register,
    shape_of,
    wrapped_scalar,
)

aten = torch.ops.aten
prims = torch.ops.prims


_LOG1P = "tl.where(({u} == 1.0) | ({u} == float('inf')), {a}, tl.log({u}) * ({a} / ({u} - 1.0)))"
_EXPM1 = (
    "tl.where(({u} == 1.0) | ({u} == float('inf')), tl.where({u} == 1.0, {a}, {u}),"
    " tl.where({u} - 1.0 == -1.0, -1.0, ({u} - 1.0) * ({a} / tl.log({u}))))"
)

# (op, Triton expression over the cast inputs) -- computed in the output's compute dtype.
_ARITH = [
    (aten.neg.default, lambda a: f"-{a}"),
    (aten.abs.default, lambda a: f"tl.abs({a})"),
    (aten.exp.default, lambda a: f"tl.exp({a})"),
    (aten.exp2.default, lambda a: f"tl.exp2({a})"),
    (aten.log.default, lambda a: f"tl.log({a})"),
    (aten.log2.default, lambda a: f"tl.log2({a})"),
    # the interpreter has no log1p/expm1 (libdevice's on the GPU): Goldberg's and Kahan's exact-
    # rounding corrections, since log(1 + a) / exp(a) - 1 lose every digit of a tiny `a`
    (aten.log1p.default, lambda a: _LOG1P.format(a=a, u=f"(1.0 + {a})")),
    (aten.expm1.default, lambda a: _EXPM1.format(a=a, u=f"tl.exp({a})")),
    (aten.sqrt.default, lambda a: f"tl.sqrt({a})"),
    (aten.rsqrt.default, lambda a: f"tl.rsqrt({a})"),
    (aten.sin.default, lambda a: f"tl.sin({a})"),
    (aten.cos.default, lambda a: f"tl.cos({a})"),
    (aten.tanh.default, lambda a: f"(2.0 / (1.0 + tl.exp(-2.0 * {a})) - 1.0)"),  # no libdevice on CPU
    (aten.sigmoid.default, lambda a: f"(1.0 / (1.0 + tl.exp(-{a})))"),  # tl.sigmoid is a stdlib @jit
    (aten.erf.default, lambda a: f"tl.math.erf({a})"),
    (aten.reciprocal.default, lambda a: f"(1.0 / {a})"),
    # torch's max/min/relu/clamp propagate NaN; Triton's default (NONE) would drop it on the GPU
    (aten.relu.default, lambda a: f"tl.maximum({a}, 0, propagate_nan=tl.PropagateNan.ALL)"),
    (aten.floor.default, lambda a: f"tl.floor({a})"),
    (aten.ceil.default, lambda a: f"tl.ceil({a})"),
    (aten.trunc.default, lambda a: f"tl.where({a} < 0, tl.ceil({a}), tl.floor({a}))"),
    (aten.mul.Tensor, lambda a, b: f"{a} * {b}"),
    (aten.mul.Scalar, lambda a, b: f"{a} * {b}"),
    (aten.div.Tensor, lambda a, b: f"{a} / {b}"),
    (aten.true_divide.Tensor, lambda a, b: f"{a} / {b}"),  # div.Tensor's alias (sizes as tensors)
    (aten.div.Scalar, lambda a, b: f"{a} / {b}"),
    (aten.maximum.default, lambda a, b: f"tl.maximum({a}, {b}, propagate_nan=tl.PropagateNan.ALL)"),
    (aten.minimum.default, lambda a, b: f"tl.minimum({a}, {b}, propagate_nan=tl.PropagateNan.ALL)"),
    (aten.bitwise_and.Tensor, lambda a, b: f"{a} & {b}"),
    (aten.bitwise_or.Tensor, lambda a, b: f"{a} | {b}"),
    (aten.bitwise_xor.Tensor, lambda a, b: f"{a} ^ {b}"),
    (aten.logical_and.default, lambda a, b: f"({a} != 0) & ({b} != 0)"),
    (aten.logical_or.default, lambda a, b: f"({a} != 0) | ({b} != 0)"),
    (aten.logical_xor.default, lambda a, b: f"({a} != 0) ^ ({b} != 0)"),
    (aten.logical_not.default, lambda a: f"({a} == 0)"),
    (aten.sign.default, lambda a: f"(({a} > 0).to(tl.float32) - ({a} < 0).to(tl.float32))"),
]
if hasattr(prims, "fma"):
    _ARITH.append((prims.fma.default, lambda a, b, c: f"{a} * {b} + {c}"))
_FLOAT_ONLY = {
    aten.exp.default, aten.exp2.default, aten.log.default, aten.log2.default, aten.log1p.default,
    aten.expm1.default, aten.sqrt.default, aten.rsqrt.default, aten.sin.default, aten.cos.default,
    aten.tanh.default, aten.sigmoid.default, aten.erf.default, aten.reciprocal.default,
    aten.floor.default, aten.ceil.default, aten.trunc.default,
}  # fmt: skip


# On the GPU these use libdevice's correctly rounded forms; the interpreter cannot run libdevice
# (extern_elementwise, TRITON-NOTES.md), so CPU kernels keep the composite forms above.
_LIBDEVICE = {aten.tanh.default: "tanh", aten.log1p.default: "log1p", aten.expm1.default: "expm1"}


def _arith(op, fmt):
    def lower(G, node, meta, *args, **kwargs):
        if kwargs or (op in _FLOAT_ONLY and not meta.dtype.is_floating_point):
            return None
        gpu = libdevice_form(meta.device, _LIBDEVICE[op]) if op in _LIBDEVICE else None
        if gpu is not None:
            return pointwise(G, node, meta, args, gpu)
        if op == aten.sign.default:
            return pointwise(G, node, meta, args, lambda a: f"{fmt(a)}.to({_tl(meta.dtype)})")
        return pointwise(G, node, meta, args, fmt)

    return lower


def _tl(dt):
    from fxlens.backend.ir import TL_DTYPE

    return TL_DTYPE[compute_dtype(dt)]


for _op, _fmt in _ARITH:
    LOWERINGS[_op] = _arith(_op, _fmt)

_BITWISE_NOT = aten.bitwise_not.default


@register(_BITWISE_NOT)
def _bitwise_not(G, node, meta, a):
    return pointwise(
        G, node, meta, [a], (lambda x: f"({x} == 0)") if meta.dtype == torch.bool else (lambda x: f"~{x}")
    )


@register(aten.add.Tensor, aten.add.Scalar, aten.sub.Tensor, aten.sub.Scalar)
def _add_sub(G, node, meta, a, b, alpha=1):
    sign = "+" if node.target in (aten.add.Tensor, aten.add.Scalar) else "-"
    if meta.dtype == torch.bool:
        return None
    tail = "" if alpha == 1 else f" * {triton_literal(wrapped_scalar(alpha, meta.dtype))}"
    return pointwise(G, node, meta, [a, b], lambda x, y: f"{x} {sign} {y}{tail}")


# div with rounding_mode, floor_divide, remainder, fmod: lower/division.py


_CMP = {
    aten.eq.Tensor: "==", aten.eq.Scalar: "==", aten.ne.Tensor: "!=", aten.ne.Scalar: "!=",
    aten.lt.Tensor: "<", aten.lt.Scalar: "<", aten.le.Tensor: "<=", aten.le.Scalar: "<=",
    aten.gt.Tensor: ">", aten.gt.Scalar: ">", aten.ge.Tensor: ">=", aten.ge.Scalar: ">=",
}  # fmt: skip


def _cmp(G, node, meta, a, b):
    op = _CMP[node.target]
    return pointwise(
        G, node, meta, [a, b], lambda x, y: f"({x} {op} {y})", compute=promoted_dtype(a, b), cast_result=False
    )


for _op in _CMP:
    LOWERINGS[_op] = _cmp


@register(aten.isnan.default)
def _isnan(G, node, meta, a):
    return pointwise(G, node, meta, [a], lambda x: f"({x} != {x})", compute=a.dtype, cast_result=False)


@register(aten.isinf.default)
def _isinf(G, node, meta, a):
    return pointwise(
        G, node, meta, [a], lambda x: f"(tl.abs({x}) == float('inf'))", compute=a.dtype, cast_result=False
    )


@register(aten.pow.Tensor_Scalar)
def lower_pow(G, node, meta, a, e):
    if not meta.dtype.is_floating_point:
        return None
    table = {2: lambda x: f"{x} * {x}", 3: lambda x: f"{x} * {x} * {x}", 1: lambda x: x,
             0.5: lambda x: f"tl.sqrt({x})", -0.5: lambda x: f"tl.rsqrt({x})",
             -1: lambda x: f"(1.0 / {x})", -2: lambda x: f"(1.0 / ({x} * {x}))",
             0: lambda x: f"({x} * 0.0 + 1.0)"}  # fmt: skip
    if e in table:
        return pointwise(G, node, meta, [a], table[e])
    gpu = libdevice_form(meta.device, "pow", 2)
    if gpu is not None:  # handles negative bases and integer exponents exactly
        return pointwise(G, node, meta, [a, float(e)], gpu)
    if float(e).is_integer():
        return None  # negative bases with integer exponents: leave to ATen
    return pointwise(G, node, meta, [a], lambda x: f"tl.exp2({triton_literal(float(e))} * tl.log2({x}))")


@register(aten.pow.Scalar)
def _pow_scalar(G, node, meta, base, e):
    if not isinstance(base, (int, float)) or base <= 0 or not meta.dtype.is_floating_point:
        return None
    return pointwise(G, node, meta, [e], lambda x: f"tl.exp2({x} * {triton_literal(math.log2(base))})")


@register(aten.clamp.default, aten.clamp_min.default, aten.clamp_max.default)
def _clamp(G, node, meta, a, lo=None, hi=None):
    if node.target == aten.clamp_max.default:
        lo, hi = None, lo

    def fmt(x):
        if lo is not None:
            x = f"tl.maximum({x}, {triton_literal(lo)}, propagate_nan=tl.PropagateNan.ALL)"
        if hi is not None:
            x = f"tl.minimum({x}, {triton_literal(hi)}, propagate_nan=tl.PropagateNan.ALL)"
        return x

    return pointwise(G, node, meta, [a], fmt)


@register(aten.clamp.Tensor)
def _clamp_tensor(G, node, meta, a, lo=None, hi=None):
    # tensor bounds (F.cosine_similarity clamps its norms by a 0-d eps tensor); NaN anywhere is NaN
    nan = "propagate_nan=tl.PropagateNan.ALL"

    def fmt(x, *bounds):
        it = iter(bounds)
        if lo is not None:
            x = f"tl.maximum({x}, {next(it)}, {nan})"
        if hi is not None:
            x = f"tl.minimum({x}, {next(it)}, {nan})"
        return x

    return pointwise(
        G, node, meta, [a] + [b for b in (lo, hi) if b is not None], fmt, compute=compute_dtype(meta.dtype)
    )


@register(aten.where.self)
def _where(G, node, meta, c, a, b):
    cv = G.use(c, node) if isinstance(c, Value) else c
    shape, dt = shape_of(meta), meta.dtype
    vals = [G.use(v, node) if isinstance(v, Value) else v for v in (a, b)]

    def fn(ctx, idx):
        cond = cv.load(ctx, broadcast_index(idx, cv.shape, shape)) if isinstance(cv, Value) else triton_literal(cv)
        if isinstance(cv, Value) and cv.dtype != torch.bool:
            cond = ctx.op(f"{cond} != 0")
        xs = []
        for v in vals:
            if isinstance(v, Value):
                xs.append(ctx.cast(v.load(ctx, broadcast_index(idx, v.shape, shape)), v.dtype, dt))
            else:
                xs.append(ctx.full(v, dt))
        return ctx.op(f"tl.where({cond}, {xs[0]}, {xs[1]})")

    return Pointwise(fn, shape, dt, meta.device, node)


def _cast(G, node, meta, a):
    if not isinstance(a, Value):
        return None
    return pointwise(G, node, meta, [a], lambda x: x, compute=a.dtype)


@register(aten._to_copy.default)
def _to_copy(G, node, meta, a, **kwargs):
    if meta.device != a.device:
        return None
    return _cast(G, node, meta, a)


@register(prims.convert_element_type.default)
def _convert(G, node, meta, a, dtype):
    return _cast(G, node, meta, a)


@register(aten.clone.default, aten.lift_fresh_copy.default)
def _clone(G, node, meta, a, **kwargs):
    return _cast(G, node, meta, a)


@register(aten.alias.default, aten.detach.default)
def _alias(G, node, meta, a):
    return G.relabel(a, node)


@register(aten.copy.default)
def _copy(G, node, meta, dst, src, non_blocking=False):
    if not isinstance(src, Value):
        return None
    return pointwise(G, node, meta, [src], lambda x: x, compute=src.dtype)
