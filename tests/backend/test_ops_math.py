"""Elementwise math with composite forms on CPU (lower/elementwise_math.py, lower/math_helpers.py) and the ops the
op_db coverage sweep moved to torch's decompositions (lower.py `_COVERAGE_DECOMPS`).

Inputs span every range the formulas switch on, plus NaN, +-inf, -0.0, poles and tails; results
must match eager at OpInfo's tolerance (assert_close defaults: fp32 rtol 1.3e-6 / atol 1e-5, fp64
1e-7), NaN where eager has NaN, zeros with eager's sign, and no ATen fallback.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from test_ops import check

pytestmark = pytest.mark.triton

SPECIAL = [0.0, -0.0, float("inf"), -float("inf"), float("nan"), 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5,
           1e-30, -1e-30, 1e-8, 3e38, -3e38, 2.0, -2.0, 100.0, -100.0, 0.49999997, 1 - 6e-8,
           -(1 - 6e-8), 2.4999998, 3.0, -3.0, 89.0, -89.0, 88.7, 1e6, -1e6, 15.0, -15.5]  # fmt: skip


def wide(dtype=torch.float32, n=256, seed=0) -> torch.Tensor:
    """Special values, then uniform on [-1, 1], [-30, 30] and log-uniform magnitudes 1e-20..1e20."""
    g = torch.Generator().manual_seed(seed)
    parts = [torch.tensor(SPECIAL, dtype=torch.float64)]
    for lo, hi in [(-1, 1), (-4, 4), (-30, 30)]:
        parts.append(torch.rand(n // 4, generator=g, dtype=torch.float64) * (hi - lo) + lo)
    mag = 10.0 ** torch.randint(-20, 21, (n // 4,), generator=g).double()
    parts.append((torch.rand(n // 4, generator=g, dtype=torch.float64) * 2 - 1) * mag)
    return torch.cat(parts).to(dtype)


def exact(compiled, guards, fn, *args):
    """check() at OpInfo's tolerance (assert_close defaults), NaNs and the sign of zero as eager's."""
    out, graphs = compiled(fn, *args)
    ref = fn(*args)
    torch.testing.assert_close(out, ref, equal_nan=True)
    both0 = (out == 0) & (ref == 0)
    assert torch.equal(torch.signbit(out[both0]), torch.signbit(ref[both0])), "sign of zero differs"
    assert {k: v for g in graphs for k, v in g.fallbacks.items()} == {}
    assert sum(len(g.kernels) for g in graphs) >= 1
    guards.check()


UNARY = {
    "atan": torch.atan, "asin": torch.asin, "acos": torch.acos, "sinh": torch.sinh, "cosh": torch.cosh,
    "tan": torch.tan, "asinh": torch.asinh, "acosh": torch.acosh, "atanh": torch.atanh,
    "erfc": torch.erfc, "erfinv": torch.erfinv, "lgamma": torch.lgamma, "digamma": torch.digamma,
    "log10": torch.log10, "erfcx": torch.special.erfcx, "ndtri": torch.special.ndtri,
    "ndtri_sigmoid": lambda x: torch.special.ndtri(torch.sigmoid(x)),
    "spherical_bessel_j0": torch.special.spherical_bessel_j0, "i0": torch.i0, "i0e": torch.special.i0e,
    "i1": torch.special.i1, "i1e": torch.special.i1e, "modified_bessel_i0": torch.special.modified_bessel_i0,
    "modified_bessel_i1": torch.special.modified_bessel_i1, "round": torch.round,
    "round_3": lambda x: torch.round(x, decimals=3), "round_neg2": lambda x: torch.round(x, decimals=-2),
    "pow_2.7": lambda x: torch.pow(x, 2.7), "pow_5": lambda x: torch.pow(x, 5),
    "rpow": lambda x: torch.pow(2.5, x), "angle": torch.angle, "copysign_neg0": lambda x: torch.copysign(x, -0.0),
    "signbit": torch.signbit, "ldexp": lambda x: torch.ldexp(x, torch.tensor([3])),
}  # fmt: skip
BINARY = {
    "atan2": torch.atan2, "hypot": torch.hypot, "pow": torch.pow, "float_power": torch.float_power,
    "fmax": torch.fmax, "fmin": torch.fmin, "copysign": torch.copysign, "nextafter": torch.nextafter,
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_fp32(compiled, guards, name):
    exact(compiled, guards, UNARY[name], wide())


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_fp32(compiled, guards, name):
    x = wide()
    y = wide(seed=1)[torch.randperm(len(x), generator=torch.Generator().manual_seed(2))]
    exact(compiled, guards, BINARY[name], x, y)


@pytest.mark.parametrize("name", ["atan", "erfinv", "lgamma", "digamma", "i0e", "ndtri", "round_3", "erfc"])
def test_unary_fp64(compiled, guards, name):
    exact(compiled, guards, UNARY[name], wide(torch.float64, n=128))


@pytest.mark.parametrize("name", ["atan2", "pow", "nextafter", "copysign"])
def test_binary_fp64(compiled, guards, name):
    x, y = wide(torch.float64, n=128), wide(torch.float64, n=128, seed=1).flip(0)
    exact(compiled, guards, BINARY[name], x, y)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_and_int_inputs(compiled, guards, dtype):
    x = (torch.rand(64) * 1.8 - 0.9).to(dtype)  # fp16/bf16 computed in fp32, rounded once more
    check(compiled, guards, lambda x: (torch.asin(x), torch.sinh(x), torch.erfinv(x), torch.round(x)), x)
    i = torch.arange(-8, 8)
    check(compiled, guards, lambda i: (torch.atan(i), torch.lgamma(i), torch.atan2(i, i.flip(0))), i)


def test_round_half_to_even(compiled, guards):
    x = torch.arange(-6, 6.5, 0.5).repeat(2) + torch.tensor([0.0, 1e-7]).repeat_interleave(25)
    out, _ = compiled(torch.round, x)
    assert torch.equal(out, torch.round(x))
    assert out[:25].tolist()[1::2] == [-6, -4, -4, -2, -2, 0, 0, 2, 2, 4, 4, 6]  # ties to even


def test_backward(compiled, guards):
    x = torch.linspace(-0.9, 0.9, 40, requires_grad=True)

    def fn(x):
        return (
            torch.asin(x) + torch.atanh(x) + torch.erfinv(x) + torch.lgamma(x + 2) + torch.atan2(x, 0.5 - x)
        ).sum()

    out, graphs = compiled(fn, x)
    (g,) = torch.autograd.grad(out, x)
    x2 = x.detach().clone().requires_grad_(True)
    (ref,) = torch.autograd.grad(fn(x2), x2)
    torch.testing.assert_close(g, ref)
    assert {k: v for gr in graphs for k, v in gr.fallbacks.items()} == {}


DECOMPOSED = {
    "narrow_copy": lambda x: torch.narrow_copy(x, 1, 1, 3),
    "permute_copy": lambda x: torch.permute_copy(x, (1, 0, 2)),
    "dist": lambda x: torch.dist(x, x.flip(0), 3),
    "unfold": lambda x: x.unfold(2, 2, 1) * 2,
    "max_pool3d": lambda x: F.max_pool3d(x[None], 2, 1),
    "adaptive_max_pool3d": lambda x: F.adaptive_max_pool3d(x[None], (2, 5, 3)),
    "grid_sample": lambda x: F.grid_sample(x[None], torch.tanh(x[None, :2].permute(0, 2, 3, 1) * 3), align_corners=False),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(DECOMPOSED))
def test_decomposed(compiled, guards, name):
    x = torch.randn(4, 5, 6, generator=torch.Generator().manual_seed(0))
    check(compiled, guards, DECOMPOSED[name], x)


@pytest.mark.slow  # ~40 s: Triton compiles one large kernel to PTX
def test_cuda_forms_compile_for_sm90():
    """On CUDA: libdevice where it has the function, the float64 composites elsewhere; one kernel
    with all of them compiles for sm_90 (no GPU needed, test_cuda_codegen's path)."""
    from test_cuda_codegen import _cuda_kernels, _ptx

    def fn(x, y):
        out = sum(f(x) for n, f in UNARY.items() if n not in ("signbit", "ldexp"))
        return (out + sum(f(x, y) for n, f in BINARY.items() if n != "float_power"),)

    (rec,) = _cuda_kernels(fn, ((64,), torch.float32), ((64,), torch.float32))
    for name in ("atan", "erfinv", "lgamma", "normcdfinv", "cyl_bessel_i0", "atan2", "nearbyint"):
        assert f"libdevice.{name}(" in rec["source"], name
    assert "_fx_digamma(" in rec["source"] and "_fx_i0e(" in rec["source"]  # no libdevice form
    assert ".entry " + rec["name"] in _ptx(rec)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64])
def test_shifts_and_bitwise_scalars(compiled, guards, dtype):
    """Shifts by negative amounts or >= the bit width: 0, or the sign fill for signed right shifts."""
    info = torch.iinfo(dtype)
    g = torch.Generator().manual_seed(0)
    a = torch.randint(info.min, info.max, (64,), dtype=dtype, generator=g)
    b = torch.randint(-3 if info.min < 0 else 0, info.bits + 5, (64,), dtype=dtype, generator=g)
    check(compiled, guards, lambda a, b: (a << b, a >> b, torch.bitwise_right_shift(100, b)), a, b)
    check(
        compiled,
        guards,
        lambda a: (a << 3, a >> (info.bits + 2), (a & 5) | 64 ^ 3, torch.bitwise_xor(7, a)),
        a,
    )


def test_bitwise_bool_scalars(compiled, guards):
    check(
        compiled, guards, lambda a: (a & True, torch.bitwise_or(a, False) ^ True), torch.tensor([True, False])
    )


def test_symbolic_sizes(compiled, guards):
    """lower/elementwise_math.py is pointwise only, so it takes symbolic sizes (RMSNorm's x.pow(2) lowers there)."""
    from fxlens.backend import compile_fx

    def fn(x):
        return x.pow(2).mean(-1) + torch.atan2(x, x + 1).sum(-1) + torch.round(x, decimals=2)[:, 0]

    torch._dynamo.reset()
    compile_fx.COMPILED.clear()
    f = torch.compile(fn, backend="fxlens", dynamic=True)
    for n in (6, 9):
        x = torch.rand(4, n)
        torch.testing.assert_close(f(x), fn(x))
    assert [dict(c.fallbacks) for c in compile_fx.COMPILED] == [{}]
