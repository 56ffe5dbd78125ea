"""The float64 Triton helpers behind lower/elementwise_math.py: composites of the few `tl.math` functions the
interpreter runs (exp, log, sqrt, sin, cos, erf, floor), one `@triton.jit` function each.

Each takes and returns float64 (lower/elementwise_math.py casts around it). A kernel that uses any of them gets the
whole library (`MATH`, unused functions cost nothing). Accuracy, checked against eager (fp32 and fp64)
on wide ranges with NaN, +-inf, -0.0, poles and tails: fp32 results within OpInfo's fp32 tolerance,
fp64 within ~1e-13 relative. Where eager's fp32 kernel overflows early (it computes exp(|x|) in fp32
first), the `_f32` forms return what eager returns.
"""

from __future__ import annotations


def _horner(var: str, coeffs) -> str:
    """`c0 + var * (c1 + var * (...))` as text (coefficients as exact float reprs)."""
    expr = repr(float(coeffs[-1]))
    for c in reversed(coeffs[:-1]):
        expr = f"({float(c)!r} + {var} * {expr})"
    return expr


_ATAN_SERIES = _horner("z", [(-1) ** k / (2 * k + 1) for k in range(15)])  # |a| <= tan(pi/12)


def _bessel_i_asym(nu: int, terms: int = 26) -> list[float]:
    """Coefficients of I_nu(x) * sqrt(2 pi x) / e^x in powers of 1/x (Hankel's expansion)."""
    out, c = [], 1.0
    for k in range(terms):
        out.append(c)
        c *= -(4 * nu * nu - (2 * k + 1) ** 2) / ((k + 1) * 8)
    return out


_I0_ASYM = _horner("t", _bessel_i_asym(0))
_I1_ASYM = _horner("t", _bessel_i_asym(1))
_LANCZOS = [0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
            1.5056327351493116e-7]  # fmt: skip  # g = 7, n = 9: |rel err| < 1e-15 for x >= 0.5
_LANCZOS_SUM = " + ".join(f"{c!r} / (z + {float(i)!r})" for i, c in enumerate(_LANCZOS[1:], 1))

# Every helper takes and returns float64 (callers cast); one library per kernel that uses any.
MATH = f"""
@triton.jit
def _fx_log1p(u):
    # Kahan: log(w) * u / (w - 1) with w = 1 + u is accurate for tiny u (where log(1 + u) is not)
    w = 1.0 + u
    r = tl.where(w == 1.0, u, tl.log(w) * (u / tl.where(w == 1.0, 1.0, w - 1.0)))
    return tl.where(u == float("inf"), u, r)


@triton.jit
def _fx_atan(x):
    a = tl.abs(x)
    inv = a > 1.0
    a = tl.where(inv, 1.0 / a, a)
    big = a > 0.2679491924311227  # atan(a) = pi/6 + atan((a*sqrt3 - 1) / (sqrt3 + a))
    a = tl.where(big, (a * 1.7320508075688772 - 1.0) / (a + 1.7320508075688772), a)
    z = a * a
    r = a * {_ATAN_SERIES}
    r = tl.where(big, r + 0.5235987755982988, r)
    r = tl.where(inv, 1.5707963267948966 - r, r)
    r = tl.where(x < 0, -r, r)
    return tl.where(x == 0, x, r)  # keeps -0.0


@triton.jit
def _fx_asin(x):
    return _fx_atan(x / tl.sqrt((1.0 - x) * (1.0 + x)))


@triton.jit
def _fx_acos(x):
    return 2.0 * _fx_atan(tl.sqrt((1.0 - x) / (1.0 + x)))


@triton.jit
def _fx_signbit(x):
    return (x < 0) | ((x == 0) & (1.0 / tl.where(x == 0, x, 1.0) < 0))


@triton.jit
def _fx_atan2(y, x):
    ax = tl.abs(x)
    ay = tl.abs(y)
    hi = tl.maximum(ax, ay)
    lo = tl.minimum(ax, ay)
    q = tl.where(hi == 0, 0.0, tl.where((hi == float("inf")) & (lo == float("inf")), 1.0, lo / hi))
    t = _fx_atan(q)
    t = tl.where(ay > ax, 1.5707963267948966 - t, t)
    t = tl.where(_fx_signbit(x), 3.141592653589793 - t, t)
    t = tl.where(_fx_signbit(y), -t, t)
    return tl.where((x != x) | (y != y), x + y, t)


@triton.jit
def _fx_sinh(x):
    z = x * x
    s = x * (1.0 + z / 6.0 * (1.0 + z / 20.0 * (1.0 + z / 42.0 * (1.0 + z / 72.0 * (1.0 + z / 110.0
        * (1.0 + z / 156.0 * (1.0 + z / 210.0 * (1.0 + z / 272.0))))))))
    e = tl.exp(tl.abs(x))
    b = 0.5 * e - 0.5 / e
    b = tl.where(x < 0, -b, b)
    return tl.where(tl.abs(x) < 0.5, s, b)  # the series where exp's difference cancels


@triton.jit
def _fx_cosh(x):
    e = tl.exp(tl.abs(x))
    return 0.5 * e + 0.5 / e


@triton.jit
def _fx_sinh_f32(x):
    # eager's fp32 kernel computes exp(|x|) in fp32 first: inf from |x| > 88.72283 although the
    # result would fit (its scalar path, for tiny tensors, does not); the vectorized one is matched
    return tl.where(tl.abs(x) > 88.72283172607422, x * float("inf"), _fx_sinh(x))


@triton.jit
def _fx_cosh_f32(x):
    return tl.where(tl.abs(x) > 88.72283172607422, float("inf"), _fx_cosh(x))


@triton.jit
def _fx_tan(x):
    return tl.sin(x) / tl.cos(x)


@triton.jit
def _fx_asinh(x):
    a = tl.abs(x)
    r = _fx_log1p(a + a * a / (1.0 + tl.sqrt(1.0 + a * a)))
    r = tl.where(a > 268435456.0, tl.log(a) + 0.6931471805599453, r)
    r = tl.where(x < 0, -r, r)
    return tl.where(x == 0, x, r)


@triton.jit
def _fx_acosh(x):
    t = x - 1.0
    r = _fx_log1p(t + tl.sqrt(2.0 * t + t * t))
    r = tl.where(x > 268435456.0, tl.log(x) + 0.6931471805599453, r)
    return tl.where(x < 1.0, float("nan"), r)


@triton.jit
def _fx_atanh(x):
    return 0.5 * _fx_log1p(2.0 * x / (1.0 - x))


@triton.jit
def _fx_erfc_cf(a):
    # erfc(a) = exp(-a^2) / (sqrt(pi) * k): k's continued fraction, 30 terms (< 1e-15 for a >= 2.5)
    k = a
    for i in tl.static_range(30):
        k = a + (15.0 - 0.5 * i) / k
    return k


@triton.jit
def _fx_erfc(x):
    # 1 - erf(x) loses every digit as erfc(x) -> 0: the continued fraction from x = 2.5 on
    a = tl.maximum(x, 2.5)
    r = tl.where(x < 2.5, 1.0 - tl.math.erf(x), tl.exp(-a * a) / (1.772453850905516 * _fx_erfc_cf(a)))
    return tl.where(x != x, x, r)


@triton.jit
def _fx_erfcx(x):
    a = tl.maximum(x, 2.5)
    r = tl.where(x < 2.5, tl.exp(x * x) * (1.0 - tl.math.erf(x)), 1.0 / (1.772453850905516 * _fx_erfc_cf(a)))
    return tl.where(x != x, x, r)


@triton.jit
def _fx_erfcx_f32(x):
    # eager's fp32 form takes exp(x * x) of an fp32-rounded square for negative x
    sq = (x * x).to(tl.float32).to(tl.float64)
    return tl.where(x < 0, tl.exp(sq) * (1.0 - tl.math.erf(x)), _fx_erfcx(x))


@triton.jit
def _fx_erfinv_tail(q):
    # erfinv(1 - q) for q in [0, 1], q given exactly: Winitzki's closed form (rel err ~2e-3), then
    # Newton steps on erfc(y) = q (no cancellation near erfinv's poles)
    ln = tl.log(q * (2.0 - q))
    t = 4.330746750799873 + 0.5 * ln  # 2 / (pi * 0.147)
    y = tl.sqrt(tl.sqrt(t * t - ln / 0.147) - t)
    for _ in tl.static_range(5):
        # past 2.5 on log(erfc(y)) = -y^2 - log(sqrt(pi) k(y)), whose slope is -2k: near linear there
        k = _fx_erfc_cf(tl.maximum(y, 2.5))
        far = (y * y + tl.log(1.772453850905516 * k) + tl.log(q)) / (2.0 * k)
        near = (q - _fx_erfc(y)) / (1.1283791670955126 * tl.exp(-y * y))
        y = y - tl.where(y >= 2.5, far, near)
    y = tl.where(q == 0, float("inf"), y)
    return tl.where((q < 0) | (q > 1), float("nan"), y)


@triton.jit
def _fx_erfinv(x):
    y = _fx_erfinv_tail(1.0 - tl.abs(x))
    y = tl.where(x < 0, -y, y)
    return tl.where(x == 0, x, y)


@triton.jit
def _fx_ndtri(p):
    # sqrt(2) * erfinv(2p - 1), from the smaller tail 2 * min(p, 1 - p) (exact)
    y = 1.4142135623730951 * _fx_erfinv_tail(2.0 * tl.minimum(p, 1.0 - p))
    y = tl.where(p < 0.5, -y, y)
    return tl.where(p != p, p, y)


@triton.jit
def _fx_log10(x):
    return tl.log(x) * 0.4342944819032518


@triton.jit
def _fx_sph_j0(x):
    z = x * x
    s = 1.0 - z / 6.0 * (1.0 - z / 20.0 * (1.0 - z / 42.0 * (1.0 - z / 72.0 * (1.0 - z / 110.0
        * (1.0 - z / 156.0 * (1.0 - z / 210.0))))))
    r = tl.where(tl.abs(x) < 0.5, s, tl.sin(x) / x)
    return tl.where(tl.abs(x) == float("inf"), 0.0, r)


@triton.jit
def _fx_i0e(x):
    # e^-|x| I0(x): the power series up to |x| = 15, Hankel's expansion past it
    a = tl.abs(x)
    z = 0.25 * a * a
    term = a * 0.0 + 1.0
    s = term
    for k in tl.static_range(1, 40):
        term = term * z / (k * k)
        s = s + term
    t = 1.0 / tl.maximum(a, 15.0)
    big = {_I0_ASYM} / tl.sqrt(6.283185307179586 * tl.maximum(a, 15.0))
    r = tl.where(a < 15.0, s * tl.exp(-a), big)
    return tl.where(x != x, x, r)


@triton.jit
def _fx_i1e(x):
    a = tl.abs(x)
    z = 0.25 * a * a
    term = a * 0.0 + 1.0
    s = term
    for k in tl.static_range(1, 40):
        term = term * z / (k * (k + 1))
        s = s + term
    t = 1.0 / tl.maximum(a, 15.0)
    big = {_I1_ASYM} / tl.sqrt(6.283185307179586 * tl.maximum(a, 15.0))
    r = tl.where(a < 15.0, 0.5 * a * s * tl.exp(-a), big)
    r = tl.where(x < 0, -r, r)
    return tl.where(x != x, x, r)


@triton.jit
def _fx_i0(x):
    return _fx_i0e(x) * tl.exp(tl.abs(x))


@triton.jit
def _fx_i1(x):
    return _fx_i1e(x) * tl.exp(tl.abs(x))


@triton.jit
def _fx_i0_f32(x):
    # eager's fp32 forms multiply by exp(|x|) in fp32: inf from |x| > 88.72283 (see _fx_sinh_f32)
    r = tl.where(tl.abs(x) > 88.72283172607422, float("inf"), _fx_i0(x))
    return tl.where(tl.abs(x) == float("inf"), float("nan"), r)  # eager: inf / inf


@triton.jit
def _fx_i1_f32(x):
    r = tl.where(tl.abs(x) > 88.72283172607422, x * float("inf"), _fx_i1(x))
    return tl.where(tl.abs(x) == float("inf"), float("nan"), r)


@triton.jit
def _fx_pireduce(x):
    # x - 2k in [-1/2, 1/2] up to a flip: sin(pi x) = sin(pi r); exact for |x| < 2**52
    r = x - 2.0 * tl.floor(0.5 * x + 0.5)
    return tl.where(r > 0.5, 1.0 - r, tl.where(r < -0.5, -1.0 - r, r))


@triton.jit
def _fx_sinpi(x):
    return tl.sin(3.141592653589793 * _fx_pireduce(x))


@triton.jit
def _fx_cospi(x):
    r = tl.abs(x - 2.0 * tl.floor(0.5 * x + 0.5))  # in [0, 1]: cos(pi r) = sin(pi (1/2 - r))
    return tl.sin(3.141592653589793 * (0.5 - r))


@triton.jit
def _fx_lgamma_pos(x):
    # Lanczos (g = 7) for x >= 0.5
    z = x - 1.0
    t = z + 7.5
    s = {_LANCZOS[0]!r} + {_LANCZOS_SUM}
    return 0.9189385332046727 + (z + 0.5) * tl.log(t) - t + tl.log(s)


@triton.jit
def _fx_lgamma(x):
    refl = 1.1447298858494002 - tl.log(tl.abs(_fx_sinpi(x))) - _fx_lgamma_pos(1.0 - x)  # log(pi)
    r = tl.where(x < 0.5, refl, _fx_lgamma_pos(tl.maximum(x, 0.5)))
    r = tl.where(tl.abs(x) < 1e-8, -tl.log(tl.abs(x)), r)  # sin(pi x) loses x there
    r = tl.where((x <= 0) & (x == tl.floor(x)), float("inf"), r)  # poles
    r = tl.where(tl.abs(x) == float("inf"), float("inf"), r)
    return tl.where(x != x, x, r)


@triton.jit
def _fx_digamma_pos(x):
    # recurrence up to x + 6, then the asymptotic series (next term < 1e-11 there)
    small = x < 6.0
    acc = tl.where(small, 1.0 / x + 1.0 / (x + 1.0) + 1.0 / (x + 2.0) + 1.0 / (x + 3.0)
                   + 1.0 / (x + 4.0) + 1.0 / (x + 5.0), 0.0)
    y = tl.where(small, x + 6.0, x)
    w = 1.0 / (y * y)
    s = w * (0.08333333333333333 - w * (0.008333333333333333 - w * (0.003968253968253968
        - w * (0.004166666666666667 - w * (0.007575757575757576 - w * 0.021092796092796094)))))
    return tl.log(y) - 0.5 / y - s - acc


@triton.jit
def _fx_digamma(x):
    # reflection: psi(x) = psi(1 - x) - pi / tan(pi x)
    refl = _fx_digamma_pos(1.0 - x) - 3.141592653589793 * _fx_cospi(x) / _fx_sinpi(x)
    r = tl.where(x < 0.5, refl, _fx_digamma_pos(tl.maximum(x, 0.5)))
    r = tl.where(tl.abs(x) < 1e-8, -1.0 / x - 0.5772156649015329, r)
    r = tl.where((x < 0) & (x == tl.floor(x)), float("nan"), r)
    r = tl.where(x == 0, tl.where(_fx_signbit(x), float("inf"), float("-inf")), r)
    r = tl.where(x == float("-inf"), float("nan"), r)
    return tl.where(x != x, x, r)


@triton.jit
def _fx_pow(x, y):
    # |x|^y = exp2(y * log2|x|), then C pow's sign and special cases
    ax = tl.abs(x)
    r = tl.exp2(y * tl.log2(ax))
    yint = y == tl.floor(y)
    yodd = yint & (y - 2.0 * tl.floor(0.5 * y) == 1.0)
    neg = _fx_signbit(x)
    r = tl.where(neg & yodd, -r, r)
    r = tl.where((x < 0) & (x > float("-inf")) & ~yint, float("nan"), r)
    r = tl.where((ax == 1.0) & (tl.abs(y) == float("inf")), 1.0, r)
    return tl.where((y == 0) | (x == 1.0), 1.0, r)


@triton.jit
def _fx_hypot(x, y):
    ax = tl.abs(x)
    ay = tl.abs(y)
    hi = tl.maximum(ax, ay)
    lo = tl.minimum(ax, ay)
    q = lo / tl.where(hi == 0, 1.0, hi)
    r = hi * tl.sqrt(1.0 + q * q)
    r = tl.where((x != x) | (y != y), x + y, r)
    return tl.where((ax == float("inf")) | (ay == float("inf")), float("inf"), r)


@triton.jit
def _fx_round(x):
    # half to even, exact in any float precision: x - floor(x) is exact
    f = tl.floor(x)
    d = x - f
    odd = (f - 2.0 * tl.floor(0.5 * f)) == 1.0
    r = tl.where((d > 0.5) | ((d == 0.5) & odd), f + 1.0, f)
    return tl.where(r == 0, x * 0.0, r)  # round(-0.3) is -0.0
"""
