"""cummax / cummin / logcumsumexp (lower/scan.py's CumScan): `tl.associative_scan` with combine functions
that follow torch's rules (NaN wins and stays, ties go to the later index; logcumsumexp accumulated
in fp64, equal infinities kept). Values and indices must equal eager's, for every dim and dtype."""

from __future__ import annotations

import pytest
import torch

pytestmark = pytest.mark.triton


def _inputs(kind):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 7, 5, generator=g)
    if kind == "special":
        x[0, 1, 2] = x[0, 4, 2] = float("nan")
        x[1, :, 3] = float("-inf")
        x[2, 3, 1] = x[2, 5, 1] = float("inf")
    elif kind == "ties":
        x = torch.randint(0, 3, (4, 7, 5), generator=g).float()
    elif kind == "int64":
        x = torch.randint(-5, 5, (4, 7, 5), generator=g)
    elif kind == "fp16":
        x = x.half()
    elif kind == "bool":
        x = x > 0
    return x


OPS = {
    "cummax": torch.cummax,
    "cummin": torch.cummin,
    "logcumsumexp": lambda t, d: torch.logcumsumexp(t * 30, d),  # magnitudes where exp overflows
}


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("kind", ["randn", "special", "ties", "int64", "fp16", "bool"])
@pytest.mark.parametrize("name", sorted(OPS))
def test_cum_scans(compiled, guards, name, kind, dim):
    x = _inputs(kind)
    if name == "logcumsumexp" and not x.dtype.is_floating_point:
        pytest.skip("logcumsumexp takes floats")
    out, graphs = compiled(lambda t: OPS[name](t, dim), x)
    ref = OPS[name](x, dim)
    torch.testing.assert_close(out, ref, equal_nan=True)
    if name != "logcumsumexp":
        assert torch.equal(out[1], ref[1])
    assert {k: v for g in graphs for k, v in g.fallbacks.items()} == {}
    guards.check()


def test_cummax_backward(compiled, guards):
    x = torch.randn(3, 8, requires_grad=True)
    fn = lambda t: (torch.cummax(t, 1).values * torch.arange(8.0)).sum() + torch.logcumsumexp(t, 0).sum()  # noqa: E731
    out, _ = compiled(fn, x)
    (g,) = torch.autograd.grad(out, x)
    x2 = x.detach().clone().requires_grad_(True)
    (ref,) = torch.autograd.grad(fn(x2), x2)
    torch.testing.assert_close(g, ref)


def test_long_rows_stay_aten(compiled, guards):
    _, graphs = compiled(lambda t: torch.cummax(t, 1), torch.randn(2, 3000))  # past one block: ATen
    assert "aten.cummax.default" in {k for g in graphs for k in g.fallbacks}
