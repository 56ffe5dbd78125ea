"""Elementwise math the interpreter has no function for: inverse trig and hyperbolic, erfc/erfinv,
lgamma/digamma, atan2, hypot, general pow and float_power, round (half to even, and decimals).

Triton's interpreter runs only a few `tl.math` functions (exp, log, sqrt, sin, cos, erf, floor, ...;
every `libdevice` call fails, TRITON-NOTES.md). So on CPU each op is a composite of those, computed
in float64 (the interpreter's float64 is numpy's, and fp32 inputs make the range reductions exact
there): a result rounded to fp32 is then as good as a correctly rounded one, well inside OpInfo's
fp32 tolerance. Float64 inputs get the same formulas (errors ~1e-14, inside fp64 tolerance).
On CUDA the ops with a libdevice function use it (correctly rounded, no fp64 work); the others keep
the composite. Special values (NaN, +-inf, -0.0, poles) follow eager, case by case in each helper.
"""

from __future__ import annotations

import math

import torch

from fxlens.backend.ir import TL_DTYPE, Pointwise, Value, compute_dtype

# pow.Tensor_Scalar and pow.Scalar are arith's ops, replaced here: importing arith first keeps its
# registration before ours whatever imports this module first
from fxlens.backend.lower.arith import lower_pow
from fxlens.backend.lower.core import libdevice_form, pointwise, register, shape_of
from fxlens.backend.lower.math_helpers import MATH

aten = torch.ops.aten


# (op, helper, libdevice function on CUDA or None) -- unary float ops, math in float64 on CPU.
_UNARY = [
    (aten.atan.default, "_fx_atan", "atan"),
    (aten.asin.default, "_fx_asin", "asin"),
    (aten.acos.default, "_fx_acos", "acos"),
    (aten.sinh.default, "_fx_sinh", "sinh"),  # _fx_sinh_f32 for fp32 results (see there)
    (aten.cosh.default, "_fx_cosh", "cosh"),
    (aten.tan.default, "_fx_tan", "tan"),
    (aten.asinh.default, "_fx_asinh", "asinh"),
    (aten.acosh.default, "_fx_acosh", "acosh"),
    (aten.atanh.default, "_fx_atanh", "atanh"),
    (aten.erfc.default, "_fx_erfc", "erfc"),
    (aten.erfinv.default, "_fx_erfinv", "erfinv"),
    (aten.lgamma.default, "_fx_lgamma", "lgamma"),
    (aten.digamma.default, "_fx_digamma", None),  # libdevice has none
    (aten.log10.default, "_fx_log10", "log10"),
    (aten.special_erfcx.default, "_fx_erfcx", "erfcx"),
    (aten.special_ndtri.default, "_fx_ndtri", "normcdfinv"),
    (aten.special_spherical_bessel_j0.default, "_fx_sph_j0", None),
    (aten.i0.default, "_fx_i0", "cyl_bessel_i0"),  # _fx_i0_f32 / _fx_i1_f32 for fp32 results
    (aten.special_i0e.default, "_fx_i0e", None),
    (aten.special_i1.default, "_fx_i1", "cyl_bessel_i1"),
    (aten.special_i1e.default, "_fx_i1e", None),
    (aten.special_modified_bessel_i0.default, "_fx_i0", "cyl_bessel_i0"),
    (aten.special_modified_bessel_i1.default, "_fx_i1", "cyl_bessel_i1"),
]
# (op, helper, libdevice function) -- binary float ops
_BINARY = [
    (aten.atan2.default, "_fx_atan2", "atan2"),
    (aten.hypot.default, "_fx_hypot", "hypot"),
    (aten.pow.Tensor_Tensor, "_fx_pow", "pow"),
    (aten.pow.Tensor_Scalar, "_fx_pow", "pow"),  # exponents lower/arith.py has no table entry for
    (aten.pow.Scalar, "_fx_pow", "pow"),
]


_POW_TABLE = (0, 0.5, -0.5, 1, -1, 2, -2, 3)  # exponents arith.lower_pow writes as products or roots


def _with_math(pw: Pointwise) -> Pointwise:
    """PW, with fxlens's fp64 math helpers (`MATH`) put in the kernel that computes it."""
    inner = pw.fn

    def fn(ctx, idx):
        ctx.helpers["_fx_math"] = MATH
        return inner(ctx, idx)

    pw.fn = fn
    return pw


def math_pointwise(G, node, meta, inputs, helper: str, gpu: str | None, compute=None):
    """`helper(*inputs)` in float64 (CPU, or no libdevice form), else `libdevice.gpu(...)`."""
    if not meta.dtype.is_floating_point:
        return None
    out = compute_dtype(meta.dtype) if compute is None else compute
    dev = libdevice_form(meta.device, gpu, len(inputs)) if gpu else None
    if dev is not None:
        return pointwise(G, node, meta, inputs, dev, compute=out)

    tensors = [isinstance(v, Value) for v in inputs]
    # a Python scalar operand is rounded to the tensor's (compute) dtype first, as in eager
    inputs = [v if t else float(torch.tensor(v, dtype=out)) for v, t in zip(inputs, tensors, strict=True)]

    def fmt(*xs):
        args = ", ".join(
            (x if out == torch.float64 else f"({x}).to(tl.float64)")
            if t
            else f"tl.full([1], {x}, tl.float64)"
            for x, t in zip(xs, tensors, strict=True)
        )
        res = f"{helper}({args})"
        return res if out == torch.float64 else f"{res}.to({TL_DTYPE[out]})"

    return _with_math(pointwise(G, node, meta, inputs, fmt, compute=out))


_F32_FORM = {"_fx_sinh": "_fx_sinh_f32", "_fx_cosh": "_fx_cosh_f32", "_fx_i0": "_fx_i0_f32",
             "_fx_i1": "_fx_i1_f32", "_fx_erfcx": "_fx_erfcx_f32"}  # fmt: skip  # eager's fp32 overflow


def _unary(helper, gpu):
    def lower(G, node, meta, a):
        h = _F32_FORM.get(helper, helper) if compute_dtype(meta.dtype) == torch.float32 else helper
        return math_pointwise(G, node, meta, [a], h, gpu)

    return lower


def _binary(helper, gpu):
    def lower(G, node, meta, a, b):
        if node.target == aten.pow.Tensor_Scalar and b in _POW_TABLE:
            return lower_pow(G, node, meta, a, b)  # x*x, sqrt, ...: lower/arith.py's table
        return math_pointwise(G, node, meta, [a, b], helper, gpu)

    return lower


for _op, _helper, _gpu in _UNARY:
    register(_op)(_unary(_helper, _gpu))
for _op, _helper, _gpu in _BINARY:
    register(_op)(_binary(_helper, _gpu))


@register(aten.float_power.Tensor_Tensor, aten.float_power.Tensor_Scalar, aten.float_power.Scalar)
def _float_power(G, node, meta, a, b):
    """pow in float64 (float_power's result dtype)."""
    return math_pointwise(G, node, meta, [a, b], "_fx_pow", "pow", compute=torch.float64)


@register(aten.round.default, aten.round.decimals)
def _round(G, node, meta, a, *, decimals=0):
    """Half to even; with decimals, eager's own steps in the dtype: round(x * 10^d) / 10^d (or
    round(x / 10^-d) * 10^-d), so results match bit for bit."""
    if not isinstance(a, Value):
        return None
    if not meta.dtype.is_floating_point:
        return pointwise(G, node, meta, [a], lambda x: x)  # integers are already round
    cdt = compute_dtype(meta.dtype)
    if decimals != 0 and cdt != meta.dtype:
        return None  # eager rounds fp16/bf16 after each step of the decimals formula: not mirrored
    gpu = libdevice_form(meta.device, "nearbyint")
    rnd = gpu or (lambda x: f"_fx_round({x})")
    if decimals == 0:
        expr = rnd
    else:
        ten = float(10 ** abs(decimals))
        if cdt == torch.float32:
            ten = float(torch.tensor(ten, dtype=torch.float32))  # eager's scalar_t constant
        t = f"tl.full([1], {ten!r}, {TL_DTYPE[cdt]})"
        div = (
            (lambda p, q: f"tl.math.div_rn({p}, {q})")
            if cdt == torch.float32
            else (lambda p, q: f"{p} / {q}")
        )
        if decimals > 0:

            def expr(x):
                return div(rnd(f"({x} * {t})"), t)
        else:

            def expr(x):
                return f"{rnd(div(x, t))} * {t}"

    pw = pointwise(G, node, meta, [a], expr, compute=cdt)
    return _with_math(pw) if gpu is None else pw


# --- sign, NaN-ignoring extremes, float steps: exact bit-level ops in the compute dtype ----------
_INT_OF = {torch.float32: "tl.int32", torch.float64: "tl.int64"}


@register(aten.fmax.default, aten.fmin.default)
def _fmax(G, node, meta, a, b):
    """max/min that ignore a NaN operand (NaN only when both are)."""
    f = "tl.maximum" if node.target == aten.fmax.default else "tl.minimum"
    return pointwise(
        G, node, meta, [a, b],
        lambda x, y: f"tl.where({x} != {x}, {y}, tl.where({y} != {y}, {x}, {f}({x}, {y})))",
    )  # fmt: skip


@register(aten.copysign.Tensor, aten.copysign.Scalar)
def _copysign(G, node, meta, a, b):
    """|a| with b's sign bit (read from its bits: -0.0 and -NaN count as negative, as in C)."""
    cdt = compute_dtype(meta.dtype)
    if not meta.dtype.is_floating_point or cdt not in _INT_OF:
        return None
    if not isinstance(b, Value):
        neg = math.copysign(1.0, float(b)) < 0
        return pointwise(
            G, node, meta, [a], lambda x: f"-tl.abs({x})" if neg else f"tl.abs({x})", compute=cdt
        )
    ints = _INT_OF[cdt]
    return pointwise(
        G, node, meta, [a, b],
        lambda x, y: f"tl.where({y}.to({ints}, bitcast=True) < 0, -tl.abs({x}), tl.abs({x}))", compute=cdt,
    )  # fmt: skip


@register(aten.signbit.default)
def _signbit(G, node, meta, a):
    """The sign bit itself (-0.0 and -NaN are negative), read from the bits of floats."""
    if not isinstance(a, Value) or a.dtype == torch.bool or a.dtype == torch.uint8:
        return None
    cdt = compute_dtype(a.dtype)
    if not a.dtype.is_floating_point:
        return pointwise(G, node, meta, [a], lambda x: f"({x} < 0)", compute=cdt, cast_result=False)
    ints = _INT_OF[cdt]
    return pointwise(
        G, node, meta, [a], lambda x: f"({x}.to({ints}, bitcast=True) < 0)", compute=cdt, cast_result=False
    )


@register(aten.nextafter.default)
def _nextafter(G, node, meta, a, b):
    """The next float after a toward b: one step of a's bit pattern (fp32/fp64 only: fp16/bf16
    steps are not fp32 steps)."""
    dt = meta.dtype
    if dt not in _INT_OF or not all(isinstance(v, Value) and v.dtype == dt for v in (a, b)):
        return None
    ints = _INT_OF[dt]
    low = "-2147483647" if dt == torch.float32 else "-9223372036854775807"  # -tiny: sign bit | 1

    def fmt(x, y):
        bits = f"{x}.to({ints}, bitcast=True)"
        step = f"tl.where(({x} < {y}) == ({x} > 0), {bits} + 1, {bits} - 1)"
        step = f"tl.where({x} == 0, tl.where({y} > 0, 1, {low}).to({ints}), {step})"
        r = f"{step}.to({_tl_float(dt)}, bitcast=True)"
        return f"tl.where(({x} != {x}) | ({y} != {y}), {x} + {y}, tl.where({x} == {y}, {y}, {r}))"

    return pointwise(G, node, meta, [a, b], fmt)


def _tl_float(dt):
    return TL_DTYPE[dt]


@register(aten.angle.default)
def _angle(G, node, meta, a):
    """The argument of a real number: pi for negatives, 0 otherwise, NaN kept."""
    if not meta.dtype.is_floating_point or (isinstance(a, Value) and a.dtype.is_complex):
        return None
    return pointwise(
        G, node, meta, [a], lambda x: f"tl.where({x} != {x}, {x}, tl.where({x} < 0, 3.141592653589793, 0.0))"
    )


# --- bitwise ops with a scalar, and shifts with torch's out-of-range rule ------------------------
_BITWISE = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^"}  # packet -> operator


def _bitwise_scalar(sym):
    def lower(G, node, meta, a, b):
        if meta.dtype.is_floating_point or meta.dtype.is_complex:
            return None
        return pointwise(G, node, meta, [a, b], lambda x, y: f"({x} {sym} {y})", compute=meta.dtype)

    return lower


for _name, _sym in _BITWISE.items():
    for _ov in ("Scalar", "Scalar_Tensor"):
        register(getattr(getattr(aten, _name), _ov))(_bitwise_scalar(_sym))


def _shift(left: bool):
    """torch: a shift by a negative amount or by >= the bit width gives 0 (left, and right of
    unsigned) or the sign fill a >> (bits - 1) (right of signed); in range, C's shift."""

    def lower(G, node, meta, a, b):
        dt = meta.dtype
        if dt.is_floating_point or dt.is_complex or dt == torch.bool:
            return None
        bits = torch.iinfo(dt).bits
        signed = torch.iinfo(dt).min < 0

        def fmt(x, y):
            oob = f"(({y} < 0) | ({y} >= {bits}))"
            amount = f"tl.where({oob}, {bits - 1}, {y})"  # in range for the discarded branch too
            if left:
                return f"tl.where({oob}, 0, {x} << {amount})"
            return f"({x} >> {amount})" if signed else f"tl.where({oob}, 0, {x} >> {amount})"

        return pointwise(G, node, meta, [a, b], fmt, compute=dt)

    return lower


for _packet, _left in ((aten.bitwise_left_shift, True), (aten.__lshift__, True),
                       (aten.bitwise_right_shift, False), (aten.__rshift__, False)):  # fmt: skip
    for _ov in ("Tensor", "Tensor_Scalar", "Scalar_Tensor", "Scalar"):
        if hasattr(_packet, _ov):
            register(getattr(_packet, _ov))(_shift(_left))


@register(aten.frexp.Tensor)
def _frexp(G, node, meta, a):
    """(mantissa in [0.5, 1) with a's sign, int32 exponent) from a's bits; subnormals are scaled by
    2^25 (2^54 in fp64) first; 0, inf and NaN give (a, 0) as eager."""
    if not isinstance(a, Value) or not a.dtype.is_floating_point:
        return None
    cdt = compute_dtype(a.dtype)
    ints, (mbits, bias, scale, shift) = _INT_OF[cdt], ((23, 126, 25, 0xFF) if cdt == torch.float32 else
                                                       (52, 1022, 54, 0x7FF))  # fmt: skip
    a = G.use(a, node)

    def parts(ctx, idx):
        x = ctx.cast(a.load(ctx, idx), a.dtype, cdt)
        sub = ctx.op(f"tl.abs({x}) < {2.0 ** (-bias)!r}")  # zero or subnormal
        y = ctx.op(f"tl.where({sub}, {x} * {float(2**scale)!r}, {x})")
        b = ctx.op(f"{y}.to({ints}, bitcast=True)")
        e = ctx.op(f"(({b} >> {mbits}) & {shift})")
        keep = ctx.op(f"({x} == 0) | ({x} != {x}) | (tl.abs({x}) == float('inf'))")
        m = ctx.op(f"(({b} & ~({shift} << {mbits})) | ({bias} << {mbits})).to({TL_DTYPE[cdt]}, bitcast=True)")
        exp = ctx.op(f"tl.where({keep}, 0, {e} - {bias} - tl.where({sub}, {scale}, 0)).to(tl.int32)")
        return ctx.op(f"tl.where({keep}, {x}, {m})"), exp

    mant = Pointwise(lambda ctx, idx: ctx.cast(parts(ctx, idx)[0], cdt, meta[0].dtype), shape_of(meta[0]),
                     meta[0].dtype, meta[0].device, node)  # fmt: skip
    expo = Pointwise(lambda ctx, idx: parts(ctx, idx)[1], shape_of(meta[1]), torch.int32, meta[1].device, node)
    mant.item, expo.item = 0, 1
    return mant, expo
