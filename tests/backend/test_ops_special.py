"""torch.special's polynomials of a tensor or scalar degree (lower_special.py): eager's algorithm
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
