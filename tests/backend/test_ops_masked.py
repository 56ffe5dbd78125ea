"""masked_scatter, put and nonzero_static (lower/masked.py), frexp (lower/elementwise_math.py): exact against eager."""

from __future__ import annotations

import pytest
import torch

pytestmark = pytest.mark.triton

G = torch.Generator().manual_seed(0)
X = torch.randn(4, 5, generator=G)
V = torch.tensor(
    [0.0, -0.0, 1.0, -1.5, 3e-39, -1e-45, 1e38, float("inf"), -float("inf"), float("nan"), 0.75, 1024.0]
)

CASES = {
    "masked_scatter": (lambda x, m, s: x.masked_scatter(m, s), X, torch.rand(4, 5, generator=G) > 0.5,
                       torch.randn(30, generator=G)),
    "masked_scatter_broadcast": (lambda x, m, s: x.masked_scatter(m, s), X, torch.rand(5, generator=G) > 0.5,
                                 torch.randn(3, 7, generator=G)),
    "masked_scatter_looped_scan": (lambda x, m, s: x.masked_scatter(m, s), torch.randn(40, 70, generator=G),
                                   torch.rand(40, 70, generator=G) > 0.3, torch.randn(2800, generator=G)),
    "put": (lambda x, i, s: x.put(i, s), X, torch.tensor([0, 19, -1, 7]), torch.randn(4, generator=G)),
    "put_accumulate": (lambda x, i, s: x.put(i, s, accumulate=True), X, torch.tensor([[0, 19], [-1, 19]]),
                       torch.randn(2, 2, generator=G)),
    "nonzero_static": (lambda x: torch.nonzero_static(x, size=8), torch.randn(4, 5, generator=G) > 0.3),
    "nonzero_static_padded": (lambda x: torch.nonzero_static(x, size=30, fill_value=7), X > 0.3),
    "nonzero_static_none": (lambda x: torch.nonzero_static(x, size=4), torch.zeros(3, 2, 2)),
    "nonzero_static_0d": (lambda x: torch.nonzero_static(x, size=1), torch.tensor(2.0)),  # op_db's samples
    "frexp": (torch.frexp, V),  # zeros, subnormals, infinities, NaN
    "frexp_fp64": (torch.frexp, torch.cat([V.double(), torch.tensor([5e-324, 1e300], dtype=torch.float64)])),
    "frexp_fp16": (torch.frexp, torch.tensor([0.0, 1.0, -1.5, 6e-8, 65504.0], dtype=torch.float16)),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CASES))
def test_cases(compiled, guards, name):
    fn, *args = CASES[name]
    out, graphs = compiled(fn, *args)
    torch.testing.assert_close(out, fn(*args), equal_nan=True, rtol=0, atol=0)
    assert {k for g in graphs for k in g.fallbacks} == set()
