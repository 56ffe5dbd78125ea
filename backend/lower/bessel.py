"""torch.special's Bessel functions J0, J1, Y0, Y1 and K0, K1 (plain and exp-scaled): eager's
Cephes algorithms (ATen/native/Math.h), step for step in the dtype with eager's coefficient tables
(cephes_data.py), so their roundings are eager's. Polynomials are Horner chains of fused
multiply-adds, as eager's CPU build contracts them; both branches of each function are computed
and selected per element. K0/K1's small-argument branch uses math_helpers' I0/I1 (float64,
rounded), where eager uses its own Cephes I0/I1: within a few ulp.
"""

from __future__ import annotations

import torch

from fxlens.backend.ir import compute_dtype
from fxlens.backend.lower.cephes_data import CEPHES
from fxlens.backend.lower.core import pointwise, register
from fxlens.backend.lower.math_helpers import MATH

aten = torch.ops.aten


def _poly(var: str, z: str, coeffs) -> list[str]:
    """`var = c0`, then `var = fma(var, z, c_i)`: eager's `var = var * z + C[i]` from var = C[0]."""
    out = [f"    {var} = tl.where(x == x, {coeffs[0]!r}, {coeffs[0]!r}).to(x.dtype)"]
    out += [f"    {var} = tl.math.fma({var}, {z}, {c!r})" for c in coeffs[1:]]
    return out


def _chebyshev(var: str, t: str, coeffs) -> list[str]:
    """Cephes' Chebyshev recurrence: b = t * q - p + C[i], keeping the previous two terms."""
    out = [f"    {var} = tl.where(x == x, {coeffs[0]!r}, {coeffs[0]!r}).to(x.dtype)",
           f"    {var}p = 0.0 * {var}", f"    {var}q = 0.0 * {var}"]  # fmt: skip
    for c in coeffs[1:]:
        out += [f"    {var}p = {var}q", f"    {var}q = {var}", f"    {var} = {t} * {var}q - {var}p + {c!r}"]
    return out


def _hankel(c, z: str, phase: str, sign: str) -> list[str]:
    """The large-x form (pp/pq cos(x - phase) -+ 5/x qp/qq sin(x - phase)) sqrt(2/pi) / sqrt(x);
    Y swaps sin and cos and adds."""
    lines = (
        _poly("pp", z, c["PP"]) + _poly("pq", z, c["PQ"]) + _poly("qp", z, c["QP"]) + _poly("qq", z, c["QQ"])
    )
    f1, f2 = ("tl.cos", "tl.sin") if sign == "-" else ("tl.sin", "tl.cos")
    lines.append(
        f"    big = (pp / pq * {f1}(xa - {phase}) {sign} 5.0 / xa * (qp / qq) * {f2}(xa - {phase}))"
        " * 0.7978845608028654 / tl.sqrt(xa)"
    )
    return lines


def _j_source(name: str, order: int) -> str:
    c = CEPHES[name]
    z_big = "25.0 / (xa * xa)" if order == 0 else "5.0 / xa * (5.0 / xa)"
    phase = "0.7853981633974483" if order == 0 else "2.356194490192345"
    lines = [f"@triton.jit\ndef _fx_{name}(x):", "    xa = tl.abs(x)", "    z = xa * xa"]
    lines += _poly("rp", "z", c["RP"]) + _poly("rq", "z", c["RQ"]) + _hankel(c, z_big, phase, "-")
    if order == 0:
        lines += [
            "    small = (z - 5.783185962946784) * (z - 30.471262343662087) * rp / rq",
            "    small = tl.where(xa < 0.00001, 1.0 - z / 4.0, small)",
            "    r = tl.where(xa <= 5.0, small, big)",
            "    return tl.where(x != x, x, r)",
        ]
    else:
        lines += [
            "    small = rp / rq * xa * (z - 14.681970642123893) * (z - 49.21845632169460)",
            "    r = tl.where(xa <= 5.0, small, big)",
            "    r = tl.where(x < 0, -r, r)",
            "    return tl.where(x != x, x, r)",
        ]
    return "\n".join(lines) + "\n"


def _y_source(name: str, order: int) -> str:
    c = CEPHES[name]
    z_big = "25.0 / (xa * xa)" if order == 0 else "5.0 / xa * (5.0 / xa)"
    phase = "0.7853981633974483" if order == 0 else "2.356194490192345"
    lines = [f"@triton.jit\ndef _fx_{name}(x):", "    xa = tl.maximum(x, 1e-30)", "    z = x * x"]
    lines += _poly("yp", "z", c["YP"]) + _poly("yq", "z", c["YQ"]) + _hankel(c, z_big, phase, "+")
    if order == 0:
        lines.append("    small = yp / yq + 0.6366197723675814 * tl.log(x) * _fx_bessel_j0(x)")
    else:
        lines.append(
            "    small = x * (yp / yq) + 0.6366197723675814 * (_fx_bessel_j1(x) * tl.log(x) - 1.0 / x)"
        )
    lines += [
        "    r = tl.where(x <= 5.0, small, big)",
        "    r = tl.where(x < 0, float('nan'), r)",
        "    r = tl.where(x == 0, float('-inf'), r)",
        "    return tl.where(x != x, x, r)",
    ]
    return "\n".join(lines) + "\n"


def _k_source(order: int) -> str:
    c = CEPHES[f"modified_bessel_k{order}"]
    i = f"_fx_i{order}(x.to(tl.float64)).to(x.dtype)"
    lines = [f"@triton.jit\ndef _fx_k{order}(x, scaled: tl.constexpr):", "    xs = tl.where(x > 0, x, 1.0)"]
    lines += _chebyshev("a", "(xs * xs - 2.0)", c["A"]) + _chebyshev("b", "(8.0 / xs - 2.0)", c["B"])
    if order == 0:
        small = f"0.5 * (a - ap) - tl.log((0.5 * xs).to(tl.float64)).to(x.dtype) * {i}"
    else:
        small = f"tl.log(0.5 * xs) * {i} + 0.5 * (a - ap) / xs"
    lines += [
        f"    small = {small}",
        "    big = 0.5 * (b - bp) / tl.sqrt(xs)",
        "    if scaled:",
        "        small = small * tl.exp(xs)",
        "    else:",
        "        big = tl.exp(-xs) * big",
        "    r = tl.where(x <= 2.0, small, big)",
        "    r = tl.where(x < 0, float('nan'), r)",
        "    r = tl.where(x == 0, float('inf'), r)",
        "    return tl.where(x != x, x, r)",
    ]
    return "\n".join(lines) + "\n"


BESSEL = "\n\n".join(
    [_j_source("bessel_j0", 0), _j_source("bessel_j1", 1), _y_source("bessel_y0", 0), _y_source("bessel_y1", 1),
     _k_source(0), _k_source(1)]
)  # fmt: skip

# (op, call in the dtype) -- each over one float tensor
_OPS = [
    (aten.special_bessel_j0.default, "_fx_bessel_j0({})"),
    (aten.special_bessel_j1.default, "_fx_bessel_j1({})"),
    (aten.special_bessel_y0.default, "_fx_bessel_y0({})"),
    (aten.special_bessel_y1.default, "_fx_bessel_y1({})"),
    (aten.special_modified_bessel_k0.default, "_fx_k0({}, False)"),
    (aten.special_modified_bessel_k1.default, "_fx_k1({}, False)"),
    (aten.special_scaled_modified_bessel_k0.default, "_fx_k0({}, True)"),
    (aten.special_scaled_modified_bessel_k1.default, "_fx_k1({}, True)"),
]


def _lower(call: str):
    def lower(G, node, meta, x):
        cdt = compute_dtype(meta.dtype)
        if cdt not in (torch.float32, torch.float64):
            return None
        pw = pointwise(G, node, meta, [x], lambda a: call.format(a), compute=cdt)
        inner = pw.fn

        def fn(ctx, idx):
            ctx.helpers["_fx_math"] = MATH  # _fx_i0 / _fx_i1
            ctx.helpers["_fx_bessel"] = BESSEL
            return inner(ctx, idx)

        pw.fn = fn
        return pw

    return lower


for _op, _call in _OPS:
    register(_op)(_lower(_call))
