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

import torch

from fxlens.backend.ir import Value, compute_dtype
from fxlens.backend.lowerings import pointwise, register
from fxlens.backend.math_helpers import MATH

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
        "    zero = tl.where(x == x, 0.0, 0.0)  # broadcasts; 0.0 * x would be NaN at x = inf",
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
