"""histc (lower/histogram.py): zeros, then an atomic count per element; bit-exact with eager, also for
elements one ulp either side of every bin edge, NaN/inf, values outside the range, 0-d and empty
inputs, ranges that are not representable in the dtype, and a fused producer. min == max (range
from the data) stays an ATen call."""

from __future__ import annotations

import pytest
import torch

pytestmark = pytest.mark.triton

G = torch.Generator().manual_seed(0)


def _edges(lo, hi, bins, dtype):
    """Every bin edge (as eager's linspace makes them) and its two neighbouring floats."""
    e = torch.linspace(lo, hi, bins + 1, dtype=dtype)
    inf = torch.tensor(float("inf"), dtype=dtype)
    return torch.cat([e, torch.nextafter(e, inf), torch.nextafter(e, -inf)])


def _x(lo, hi, bins, dtype):
    special = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1e30, -1e30], dtype=dtype)
    return torch.cat([_edges(lo, hi, bins, dtype), special, torch.randn(200, generator=G).to(dtype) * 8])


def _check(compiled, fn, *args, kernels=2):
    out, graphs = compiled(fn, *args)
    ref = fn(*args)
    assert out.dtype == ref.dtype and torch.equal(out, ref), (out, ref)
    assert {k for g in graphs for k in g.fallbacks} == set()
    assert sum(len(g.kernels) for g in graphs) == kernels


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize(
    ("bins", "lo", "hi"), [(100, 0, 10), (7, -10, 10), (1, -3, 3), (3, 0.1, 0.7), (13, -0.3, 2.9)]
)
def test_histc_matches_eager(compiled, guards, dtype, bins, lo, hi):
    _check(compiled, lambda t: torch.histc(t, bins=bins, min=lo, max=hi), _x(lo, hi, bins, dtype))


def test_histc_fused_producer_noncontiguous(compiled, guards):
    x = torch.randn(12, 20, generator=G).t()
    _check(compiled, lambda t: torch.histc(torch.sin(t) * 2, bins=9, min=-1.5, max=1.5), x)


@pytest.mark.parametrize("shape", [(), (5, 0, 5)])
def test_histc_zero_dim_and_empty(compiled, guards, shape):
    x = torch.full(shape, 2.5)
    _check(compiled, lambda t: torch.histc(t, bins=4, min=0, max=10), x, kernels=2 if shape == () else 1)


def test_histc_range_from_data_falls_back(compiled):
    x = torch.randn(50, generator=G)
    out, graphs = compiled(lambda t: torch.histc(t, bins=5), x)
    assert torch.equal(out, torch.histc(x, bins=5))
    assert {k for g in graphs for k in g.fallbacks} == {"aten.histc.default"}
