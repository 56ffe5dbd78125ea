"""torch.special's orthogonal polynomials of a tensor degree n: Chebyshev T/U/V/W (and shifted),
Hermite H/He, Laguerre L, Legendre P.

Each is eager's own algorithm (ATen/native/Math.h), step for step in the output's dtype, so the
roundings are eager's: the special values first (n < 0, x = +-1, ...), a closed form in acos(x) for
large n inside (-1, 1), else the three-term recurrence, stopped at the first NaN. The recurrence
runs for a per-element number of steps: the kernel loops up to the largest count in its block and
each element stops at its own (a masked update). A float n is truncated to an integer as eager's
static_cast does (NaN/inf: -1, so 0). acos is math_helpers' float64 composite, rounded to the dtype.
"""

from __future__ import annotations

import math

import torch

from fxlens.backend.ir import TL_DTYPE, Value, compute_dtype
from fxlens.backend.lower.core import pointwise, register
from fxlens.backend.lower.math_helpers import MATH

aten = torch.ops.aten


def _acos(y: str) -> str:
    return f"_fx_acos({y}.to(tl.float64)).to({y}.dtype)"


# name -> (y from x, special cases [(condition, value)] in eager's order, closed form (min n,
# expression) or None, value at n == 1, recurrence (first k, "k < end", step expression)).
# Expressions see x, y, n (int64, >= 0), p, q, k; `a` is acos(y) where a closed form exists.
_CHEB_STEP = (2, "n + 1", "tl.math.fma(y + y, q, -p)")
_POLYS = {
    "chebyshev_polynomial_t": ("x", [("tl.abs(x) == 1.0", "tl.where((x > 0) | (n % 2 == 0), 1.0, -1.0)")],
                               (6, "tl.cos(n * a)"), "x", _CHEB_STEP),
    "chebyshev_polynomial_u": ("x", [("tl.abs(x) == 1.0", "tl.where((x > 0) | (n % 2 == 0), n + 1, -(n + 1))")],
                               (8, "tl.where(tl.sin(a) != 0.0, tl.sin((n + 1) * a) / tl.sin(a), "
                                   "(n + 1) * tl.cos((n + 1) * a) / x)"), "x + x", _CHEB_STEP),
    "chebyshev_polynomial_v": ("x", [("tl.abs(x) == 1.0", "tl.where(x > 0, 1.0, tl.where(n % 2 == 0, n + n + 1,"
                                      " -(n + n + 1)))")],
                               (8, "tl.where(tl.sin(a / 2.0) != 1.0, tl.cos((n + 0.5) * a) / tl.cos(a / 2.0), "
                                   "tl.where(n % 2 == 0, n + n + 1, -(n + n + 1)))"), "x + x - 1.0", _CHEB_STEP),
    "chebyshev_polynomial_w": ("x", [("tl.abs(x) == 1.0", "tl.where(x > 0, n + n + 1, tl.where(n % 2 == 0, 1.0,"
                                      " -1.0))")],
                               (8, "tl.where(tl.cos(a / 2.0) != 1.0, tl.sin((n + 0.5) * a) / tl.sin(a / 2.0), "
                                   "tl.where(x > 0, n + n + 1, tl.where(n % 2 == 0, 1.0, -1.0)))"), "x + x + 1.0",
                               _CHEB_STEP),
    "shifted_chebyshev_polynomial_t": ("x + x - 1.0", [("x == 1.0", "1.0"), ("x == 0.0", "tl.where(n % 2 == 0, 1.0,"
                                       " -1.0)")], (6, "tl.cos(n * a)"), "y", _CHEB_STEP),
    "shifted_chebyshev_polynomial_u": ("x + x - 1.0", [("x == 1.0", "n + 1"), ("x == 0.0", "tl.where(n % 2 == 0, "
                                       "n + 1, -(n + 1))")],
                                       (6, "tl.where(tl.sin(a) != 0.0, tl.sin((n + 1) * a) / tl.sin(a), "
                                           "(n + 1) * tl.cos((n + 1) * a) / y)"), "y + y", _CHEB_STEP),
    "shifted_chebyshev_polynomial_v": ("x + x - 1.0", [("x == 1.0", "1.0"), ("x == 0.0", "tl.where(n % 2 == 0, "
                                       "n + n + 1, -(n + n + 1))")],
                                       (6, "tl.where(tl.sin(a / 2.0) != 1.0, tl.cos((n + 0.5) * a) / tl.cos(a / 2.0),"
                                           " tl.where(n % 2 == 0, n + n + 1, -(n + n + 1)))"), "y + y - 1.0",
                                       _CHEB_STEP),
    "shifted_chebyshev_polynomial_w": ("x + x - 1.0", [("x == 1.0", "n + n + 1"), ("x == 0.0", "tl.where(n % 2 == 0,"
                                       " 1.0, -1.0)")],
                                       (4, "tl.where(tl.cos(a / 2.0) != 1.0, tl.sin((n + 0.5) * a) / tl.sin(a / 2.0),"
                                           " tl.where(n % 2 == 0, 1.0, -1.0))"), "y + y + 1.0", _CHEB_STEP),
    "hermite_polynomial_h": ("x", [("n > HLIM", 'float("nan")')], None, "x + x", (2, "n + n", "tl.math.fma(x + x, q, -(k * p))")),
    "hermite_polynomial_he": ("x", [("n > HLIM", 'float("nan")')], None, "x", (1, "n", "tl.math.fma(x, q, -(k * p))")),
    "laguerre_polynomial_l": ("x", [("tl.abs(x) == 0.0", "1.0")], None, "1.0 - x",
                              (1, "n", "(((k + k) + (1.0 - x)) * q - k * p) / (k + 1)")),
    "legendre_polynomial_p": ("x", [("tl.abs(x) == 1.0", "tl.where((x > 0) | (n % 2 == 0), 1.0, -1.0)")], None, "x",
                              (1, "n", "((k + k + 1) * x * q - k * p) / (k + 1)")),
}  # fmt: skip
_HERMITE_STEP2 = {"hermite_polynomial_h"}  # its k runs over even numbers 2, 4, ... (< 2n)


def _source(name: str) -> str:
    y, cases, closed, p1, (k0, end, step) = _POLYS[name]
    by2 = name in _HERMITE_STEP2
    lines = [
        "@triton.jit",
        f"def _fx_{name}(x, nf, HLIM: tl.constexpr):",
        "    zero = tl.where(x == x, 0.0, 0.0).to(x.dtype)  # broadcasts; 0.0 * x would be NaN at x = inf",
        "    nf = nf + zero",
        "    n = tl.where((nf != nf) | (tl.abs(nf) == float('inf')), -1, nf).to(tl.int64)",
        f"    y = {y}",
        f"    p1 = ({p1}) + zero",
    ]
    special = "n < 0"
    for cond, _ in cases:
        special = f"{special} | ({cond})"
    if closed is not None:
        lines.append(f"    a = {_acos('y')}")
        lines.append(f"    closed = (n > {closed[0]}) & (tl.abs(y) < 1.0) & ~({special})")
        special = f"{special} | closed"
    lines += [
        f"    direct = {special} | (n <= 1)",
        f"    steps = tl.where(direct, {k0}, {end})",  # the loop's end per element (k < end)
        "    last = tl.reduce(steps, None, _fx_maxi)",
        "    p = 1.0 + zero",
        "    q = p1",
        f"    for k in range({k0}, last{', 2' if by2 else ''}):",
        "        go = (k < steps) & (q == q)" if not by2 else "        go = k < steps",
        f"        r = {step}",
        "        p = tl.where(go, q, p)",
        "        q = tl.where(go, r, q)",
        "    out = tl.where(n == 0, 1.0, tl.where(n == 1, p1, q))",
    ]
    if closed is not None:
        lines.append(f"    out = tl.where(closed, {closed[1]}, out)")
    for cond, val in reversed(cases):
        lines.append(f"    out = tl.where({cond}, ({val}) + zero, out)")
    lines.append("    return tl.where(n < 0, 0.0, out).to(x.dtype)")
    return "\n".join(lines) + "\n"


_MAXI = """
@triton.jit
def _fx_maxi(a, b):
    return tl.maximum(a, b)
"""
POLY_LIB = _MAXI + "\n\n".join(_source(n) for n in _POLYS)


def _poly(name: str):
    def lower(G, node, meta, x, n):
        cdt = compute_dtype(meta.dtype)
        if not meta.dtype.is_floating_point or cdt not in (torch.float32, torch.float64):
            return None
        if not isinstance(x, Value):
            return None
        lim = 128 if cdt == torch.float32 else 512
        nn = n if isinstance(n, Value) else float(n)
        pw = pointwise(G, node, meta, [x, nn], lambda a, b: f"_fx_{name}({a}, {b}, {lim})",
                       compute=cdt)  # fmt: skip
        inner = pw.fn

        def fn(ctx, idx):
            ctx.helpers["_fx_math"] = MATH  # acos
            ctx.helpers["_fx_poly"] = POLY_LIB
            return inner(ctx, idx)

        pw.fn = fn
        return pw

    return lower


# (op, name) -- every polynomial in both overloads torch.special uses (tensor or scalar degree)
for _name in _POLYS:
    _packet = getattr(aten, f"special_{_name}")
    for _ov in ("default", "n_scalar", "x_scalar"):
        if hasattr(_packet, _ov) and _ov != "x_scalar":
            register(getattr(_packet, _ov))(_poly(_name))


# --- Hurwitz zeta and polygamma -------------------------------------------------------------------
_ZETA_A = [12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
           -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
           1.8152105401943546773e17, -7.1661652561756670113e18]  # fmt: skip  # (2k)! / B_2k


def _euler_maclaurin() -> str:
    """Cephes' 12 correction terms, unrolled (each stops the sum once it is below eps)."""
    out = []
    for a in _ZETA_A:
        out += [
            "    c = c * (x + k)",
            "    b = b / w",
            f"    t = c * b / {a!r}",
            "    e = tl.where(fin, e, e + t)",
            "    fin = fin | (tl.abs(t / e) < eps)",
            "    k = k + 1.0",
            "    c = c * (x + k)",
            "    b = b / w",
            "    k = k + 1.0",
        ]
    return "\n".join(out)


ZETA_LIB = f"""
@triton.jit
def _fx_zeta(x, q):
    # Cephes' zeta (eager's, in float64 as eager's accumulator is): a direct sum until its terms
    # vanish or q + i passes 9 (a per-element count), then Euler-Maclaurin with 12 Bernoulli terms
    eps = 1.11022302462515654042e-16
    pole = (q <= 0) & (q == tl.floor(q))
    need = tl.where(q > 0, 9.0, tl.maximum(9.0, tl.floor(9.0 - q) + 1.0))
    need = tl.where((x <= 1.0) | (x != x) | (q != q) | pole, 0.0, need).to(tl.int64)
    last = tl.reduce(need, None, _fx_maxi)
    s = _fx_pow(q, -x)
    a = q
    b = tl.where(s == s, 0.0, 0.0).to(s.dtype)
    done = need < 0
    for i in range(0, last):
        go = (i < need) & ~done
        a = tl.where(go, a + 1.0, a)
        t = _fx_pow(a, -x)
        s = tl.where(go, s + t, s)
        b = tl.where(go, t, b)
        done = done | (go & (-eps * s < b) & (b < eps * s))
    w = a
    e = s + b * w / (x - 1.0) - 0.5 * b
    fin = done
    c = tl.where(s == s, 1.0, 1.0).to(s.dtype)
    k = tl.where(s == s, 0.0, 0.0).to(s.dtype)
{_euler_maclaurin()}
    r = tl.where(done, s, e)
    r = tl.where(pole, float("inf"), r)
    r = tl.where((q <= 0) & ~pole & (x != tl.floor(x)), float("nan"), r)
    r = tl.where(x < 1.0, float("nan"), r)
    r = tl.where(x == 1.0, float("inf"), r)
    return tl.where((x != x) | (q != q), x + q, r)


@triton.jit
def _fx_trigamma(x):
    # eager's trigamma, in the dtype (its float version rounds each step in float)
    neg = x < 0.5
    spx = tl.sin(3.141592653589793 * x)
    res = tl.where(neg, -(3.141592653589793 * 3.141592653589793) / (spx * spx), tl.where(x == x, 0.0, 0.0))
    x = tl.where(neg, 1.0 - x, x)
    for i in tl.static_range(6):
        res = res + 1.0 / (x * x)
        x = x + 1.0
    ixx = 1.0 / (x * x)
    res = res + (1.0 + 1.0 / (2.0 * x) + ixx * (1.0 / 6.0 - ixx * (1.0 / 30.0 - ixx * (1.0 / 42.0)))) / x
    return tl.where(neg, -res, res)
"""


def _with_zeta(pw):
    inner = pw.fn

    def fn(ctx, idx):
        ctx.helpers["_fx_math"] = MATH  # _fx_pow
        ctx.helpers["_fx_poly"] = POLY_LIB  # _fx_maxi
        ctx.helpers["_fx_zeta"] = ZETA_LIB
        return inner(ctx, idx)

    pw.fn = fn
    return pw


@register(aten.special_zeta.default, aten.special_zeta.self_scalar, aten.special_zeta.other_scalar)
def _zeta(G, node, meta, x, q):
    """Hurwitz zeta(x, q) in float64, as eager computes it, rounded to the dtype."""
    cdt = compute_dtype(meta.dtype)
    if cdt not in (torch.float32, torch.float64) or not any(isinstance(v, Value) for v in (x, q)):
        return None
    from fxlens.backend.lower.elementwise_math import math_pointwise

    pw = math_pointwise(G, node, meta, [x, q], "_fx_zeta", None)
    return None if pw is None else _with_zeta(pw)


@register(aten.polygamma.default)
def _polygamma(G, node, meta, n, x):
    """n = 0: digamma; 1: eager's trigamma in the dtype; else (-1)^(n+1) n! zeta(n + 1, x)."""
    cdt = compute_dtype(meta.dtype)
    if (
        cdt not in (torch.float32, torch.float64)
        or not isinstance(x, Value)
        or not isinstance(n, int)
        or n < 0
    ):
        return None
    if n == 0:
        from fxlens.backend.lower.elementwise_math import math_pointwise

        return math_pointwise(G, node, meta, [x], "_fx_digamma", None)
    if n == 1:
        return _with_zeta(pointwise(G, node, meta, [x], lambda a: f"_fx_trigamma({a})", compute=cdt))
    scale = float(torch.tensor(float(math.factorial(n)) * (1 if n % 2 else -1), dtype=cdt))
    return _with_zeta(pointwise(
        G, node, meta, [x], lambda a: f"({scale!r} * _fx_zeta(tl.where({a} == {a}, {float(n + 1)!r}, {float(n + 1)!r}), "
        f"{a}.to(tl.float64)).to({TL_DTYPE[cdt]}))", compute=cdt,
    ))  # fmt: skip
