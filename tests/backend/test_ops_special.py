"""torch.special's polynomials of a tensor or scalar degree (lower/special.py): eager's algorithm
step for step in the dtype (fused multiply-adds where eager's build contracts them), so results
match eager within OpInfo's tolerance across the special cases, the closed forms and recurrences
of up to 130 steps. x = NaN is left out: eager returns an uninitialized value there (a NaN here)."""

from __future__ import annotations

import pytest
import torch

pytestmark = pytest.mark.triton

POLYS = [
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
    "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
    "laguerre_polynomial_l", "legendre_polynomial_p",
]  # fmt: skip
G = torch.Generator().manual_seed(0)
X = torch.cat(
    [torch.tensor([1.0, -1.0, 0.0, 0.5, 2.0, -2.0, 1e-3, float("inf")]), torch.rand(40, generator=G) * 4 - 2]
)
N = torch.cat([torch.tensor([-1.0, 0.0, 1.0, 2.0, 7.0, 9.0, 12.0, 3.7, float("nan"), 130.0, 129.0]),
               torch.randint(0, 15, (37,), generator=G).float()])  # fmt: skip


def _check(compiled, fn, *args):
    out, graphs = compiled(fn, *args)
    torch.testing.assert_close(out, fn(*args), equal_nan=True)
    assert {k for g in graphs for k in g.fallbacks} == set()
    assert sum(len(g.kernels) for g in graphs) >= 1


@pytest.mark.parametrize("name", POLYS)
def test_polynomial_tensor_degree(compiled, guards, name):
    _check(compiled, getattr(torch.special, name), X, N)


@pytest.mark.parametrize("name", POLYS)
def test_polynomial_scalar_degree_fp64(compiled, guards, name):
    f = getattr(torch.special, name)
    _check(compiled, lambda x: f(x, 11), X.double())


SP = torch.tensor([0.0, -0.0, 1.0, -1.0, -2.5, 0.5, 1e-4, -1e-4, 30.0, 1e5, float("inf"), -float("inf"),
                   float("nan"), -7.3, -12.5])  # fmt: skip
XS = torch.cat([SP, torch.rand(33, generator=G) * 20 - 10])  # poles, reflections, tails
S = torch.cat([torch.tensor([1.0, 0.5, 2.0, 3.0, 2.0, 2.0, 4.0, 1.5, 2.0, 5.0, 2.0, 3.0, 2.0, 4.0, 6.0]),
               torch.rand(33, generator=G) * 8 + 0.5])  # fmt: skip


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_polygamma(compiled, guards, n, dtype):
    _check(compiled, lambda x: torch.polygamma(n, x), XS.to(dtype))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_zeta(compiled, guards, dtype):
    _check(compiled, torch.special.zeta, S.to(dtype), XS.to(dtype))  # q < 0: longer direct sums
    _check(compiled, lambda q: torch.special.zeta(3.0, q), XS.to(dtype))


BESSEL = ["bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_k0", "modified_bessel_k1",
          "scaled_modified_bessel_k0", "scaled_modified_bessel_k1"]  # fmt: skip
BX = torch.cat([
    torch.tensor([0.0, -0.0, 1.0, -1.0, 5.0, -5.0, 4.9999995, 5.0000005, 2.0, 2.0000002, 1e-6, -1e-6, 30.0, 1e5,
                  1e30, float("inf"), -float("inf"), float("nan"), 1e-30, 80.0, 90.0]),
    torch.rand(40, generator=G) * 40 - 20, torch.rand(20, generator=G) * 4,
])  # fmt: skip  # both branches of each and their boundaries


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name", BESSEL)
def test_bessel(compiled, guards, name, dtype):
    _check(compiled, getattr(torch.special, name), BX.to(dtype))


@pytest.mark.slow  # Triton compiles one large kernel to PTX
def test_special_kernels_compile_for_sm90():
    from test_cuda_codegen import _cuda_kernels, _ptx

    def fn(x, n):
        out = (
            sum(getattr(torch.special, b)(x) for b in BESSEL)
            + torch.special.zeta(x, n)
            + torch.polygamma(2, x)
        )
        return (out + sum(getattr(torch.special, p)(x, n) for p in POLYS),)

    (rec,) = _cuda_kernels(fn, ((64,), torch.float32), ((64,), torch.float32))
    assert ".entry " + rec["name"] in _ptx(rec)


@pytest.mark.slow  # Triton compiles each kernel to PTX
def test_sort_scan_zeta_kernels_compile_for_sm90():
    from test_cuda_codegen import _cuda_kernels, _ptx

    def fn(x, n):
        v, i = torch.sort(x, dim=-1, stable=True)
        m, j = torch.cummax(x, 1)
        return (torch.special.zeta(x, n) + torch.special.legendre_polynomial_p(x, n), v, i, m, j,
                torch.logcumsumexp(x, 0), torch.topk(x, 3).values, torch.median(x, 1).values)  # fmt: skip

    for rec in _cuda_kernels(fn, ((8, 16), torch.float32), ((8, 16), torch.float32)):
        assert ".entry " + rec["name"] in _ptx(rec), rec["name"]
