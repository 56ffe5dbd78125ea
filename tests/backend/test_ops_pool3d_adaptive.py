"""avg_pool3d, adaptive_avg_pool3d and adaptive_max_pool1d/2d forward (lower/pool3d_adaptive.py), and the
3-D max pools that run through torch's decompositions (lower.py): padding, ceil_mode,
count_include_pad, divisor_override; NaN and -inf windows, ties (indices exact)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

pytestmark = pytest.mark.triton

G = torch.Generator().manual_seed(0)
X5 = torch.randn(2, 3, 5, 6, 7, generator=G)
X4 = torch.randn(2, 3, 7, 9, generator=G)
X4[0, 0, 1, 1] = float("nan")
X4[1, 1, 2:4, 3] = float("-inf")

CASES = {
    "avg3d": (lambda x: F.avg_pool3d(x, 2), X5),
    "avg3d_pad": (lambda x: F.avg_pool3d(x, 3, 2, 1), X5),
    "avg3d_pad_nocount": (lambda x: F.avg_pool3d(x, 3, 2, 1, count_include_pad=False), X5),
    "avg3d_ceil": (lambda x: F.avg_pool3d(x, (2, 3, 2), (2, 2, 3), (1, 1, 0), ceil_mode=True), X5),
    "avg3d_divisor": (lambda x: F.avg_pool3d(x, 2, divisor_override=3), X5[0]),
    "adaptive_avg3d": (lambda x: F.adaptive_avg_pool3d(x, (2, 4, 3)), X5),
    "adaptive_max2d": (lambda x: F.adaptive_max_pool2d(x, (3, 4), return_indices=True), X4),
    "adaptive_max2d_unbatched": (lambda x: F.adaptive_max_pool2d(x, (2, 5), return_indices=True), X4[0]),
    "adaptive_max1d": (lambda x: F.adaptive_max_pool1d(x, 4, return_indices=True), X4[0, 0]),
    "adaptive_max2d_all_neg_inf": (lambda x: F.adaptive_max_pool2d(x, 1, return_indices=True),
                                   torch.full((1, 2, 3, 3), float("-inf"))),
    "adaptive_max2d_ties": (lambda x: F.adaptive_max_pool2d(x, 2, return_indices=True), torch.ones(1, 2, 4, 4)),
    "max_pool3d": (lambda x: F.max_pool3d(x, 2, 1, return_indices=True), X5),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CASES))
def test_pool(compiled, guards, name):
    fn, x = CASES[name]
    out, graphs = compiled(fn, x)
    ref = fn(x)
    torch.testing.assert_close(out, ref, equal_nan=True)
    assert {k for g in graphs for k in g.fallbacks} == set()
    guards.check()
