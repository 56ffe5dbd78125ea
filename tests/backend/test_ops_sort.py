"""sort / argsort / topk / kthvalue / median / nanmedian (lower/sort.py): a bitonic network per row.

Values must equal eager's exactly. Indices too where torch defines them: `sort(stable=True)` always,
and any op on rows without ties. With ties (equal values, several NaNs) torch's topk, kthvalue and
(nan)median pick some index among the equal ones (CPU kernels are not stable), so there, as in
inductor's OpInfo test, the indices must point at the returned values (x.gather(indices) == values).
"""

from __future__ import annotations

import pytest
import torch

pytestmark = pytest.mark.triton

OPS = {
    "sort_dim1": lambda t: torch.sort(t, dim=1, stable=True),
    "sort_last_desc": lambda t: torch.sort(t, dim=-1, descending=True, stable=True),
    "sort_dim0": lambda t: torch.sort(t, dim=0, stable=True),
    "argsort": lambda t: torch.argsort(t, dim=1, stable=True),
    "msort": torch.msort,
    "topk": lambda t: torch.topk(t, 3, 1),
    "topk_smallest": lambda t: torch.topk(t, 2, -1, largest=False),
    "kthvalue": lambda t: torch.kthvalue(t, 2, 1),
    "kthvalue_keepdim": lambda t: torch.kthvalue(t, 4, -1, keepdim=True),
    "median": lambda t: torch.median(t, 1),
    "nanmedian": lambda t: torch.nanmedian(t, 1),
    "median_all": torch.median,
    "nanmedian_all": torch.nanmedian,
}
STABLE = {"sort_dim1", "sort_last_desc", "sort_dim0", "argsort", "msort"}


def _inputs(kind: str) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 7, 5, generator=g)
    if kind == "nan":
        x[0, 1, 2], x[2, 3, 1], x[3, 0, 0] = float("nan"), -0.0, float("inf")
        x[1, :, 3] = float("nan")
        x[2, 4, 1] = 0.0
    elif kind == "ties":
        x = torch.randint(0, 3, (4, 7, 5), generator=g).float()
    elif kind == "int32":
        x = torch.randint(-5, 5, (4, 7, 5), generator=g, dtype=torch.int32)
    elif kind == "fp16":
        x = x.half()
    elif kind == "bool":
        x = x > 0
    return x


def _agree(out, ref, x, name):
    outs, refs = (out, ref) if isinstance(ref, tuple) else ((out,), (ref,))
    assert len(outs) == len(refs)
    torch.testing.assert_close(outs[0], refs[0], equal_nan=True, rtol=0, atol=0)
    if len(refs) == 1 or name in STABLE:
        for o, r in zip(outs[1:], refs[1:], strict=True):
            assert torch.equal(o, r)
        return
    values, indices = outs
    assert indices.dtype == torch.int64 and indices.shape == refs[1].shape
    dim = -1 if name in ("topk_smallest", "kthvalue_keepdim") else 1
    if values.dim() < x.dim():  # kthvalue/median without keepdim
        values, indices = values.unsqueeze(dim), indices.unsqueeze(dim)
    torch.testing.assert_close(x.gather(dim, indices), values, equal_nan=True, rtol=0, atol=0)


@pytest.mark.parametrize("kind", ["randn", "nan", "ties", "int32", "fp16", "bool"])
@pytest.mark.parametrize("name", sorted(OPS))
def test_sort_family(compiled, guards, name, kind):
    if kind in ("ties", "bool") and name not in STABLE and not name.startswith("sort"):
        pytest.skip("covered by the other kinds")
    x = _inputs(kind)
    if name.endswith("_all"):
        x = x[:2, 1:5, 2:]  # a 24-element row: the network's stages grow with log2(row)^2
    out, graphs = compiled(OPS[name], x)
    _agree(out, OPS[name](x), x, name)
    assert {k: v for g in graphs for k, v in g.fallbacks.items()} == {}
    assert sum(len(g.kernels) for g in graphs) >= 1


def test_ties_exact_where_unique(compiled, guards):
    # no ties: every index is defined, and must be eager's
    x = torch.randperm(60, generator=torch.Generator().manual_seed(1)).float().view(6, 10)
    for name in ("topk", "kthvalue", "median", "nanmedian"):
        out, _ = compiled(OPS[name], x)
        ref = OPS[name](x)
        assert torch.equal(out[0], ref[0]) and torch.equal(out[1], ref[1]), name


def test_long_rows_and_int64_stay_aten(compiled, guards):
    out, graphs = compiled(lambda t: torch.sort(t, dim=-1), torch.randn(2, 3000))
    assert "aten.sort.default" in {k for g in graphs for k in g.fallbacks}
    out, graphs = compiled(lambda t: torch.sort(t, dim=-1), torch.arange(12).view(3, 4))
    assert "aten.sort.default" in {k for g in graphs for k in g.fallbacks}


def test_topk_backward(compiled, guards):
    x = torch.randn(5, 9, requires_grad=True)
    fn = lambda t: (torch.topk(t, 3, 1).values * torch.arange(3.0)).sum() + torch.sort(t, 0).values[1].sum()  # noqa: E731
    out, graphs = compiled(fn, x)
    (g,) = torch.autograd.grad(out, x)
    x2 = x.detach().clone().requires_grad_(True)
    (ref,) = torch.autograd.grad(fn(x2), x2)
    torch.testing.assert_close(g, ref)
    assert sum(len(gr.kernels) for gr in graphs) >= 2
