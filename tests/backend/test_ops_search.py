"""bucketize / searchsorted (lower/search.py), diagonal / diagonal_scatter / new_empty_strided
(lower/diagonal.py) and cdist's direct form and pdist (lower/distance.py), against eager: indices exact
(NaN and infinities included), values at OpInfo's tolerance, no ATen fallback."""

from __future__ import annotations

import pytest
import torch

pytestmark = pytest.mark.triton

G = torch.Generator().manual_seed(0)
X = torch.randn(4, 5, 6, generator=G)
BND = torch.tensor([-1.0, -0.5, 0.0, 0.0, 0.3, 1.0, 2.0])  # with a repeated boundary
XV = torch.cat(
    [torch.randn(30, generator=G), torch.tensor([float("nan"), -float("inf"), float("inf"), 0.0, -1.0, 2.0])]
)
SEQ = torch.sort(torch.randn(3, 8, generator=G), -1).values
A, B = torch.randn(2, 6, 5, generator=G), torch.randn(2, 7, 5, generator=G)

CASES = {
    "bucketize": (lambda v, b: torch.bucketize(v, b), XV, BND),
    "bucketize_right": (lambda v, b: torch.bucketize(v, b, right=True), XV, BND),
    "bucketize_int32": (lambda v, b: torch.bucketize(v, b, out_int32=True), XV, BND),
    "bucketize_ints": (lambda v, b: torch.bucketize(v, b), torch.arange(-3, 4), torch.tensor([-2, 0, 0, 3])),
    "searchsorted_rows": (lambda s, v: torch.searchsorted(s, v), SEQ, torch.randn(3, 5, generator=G)),
    "searchsorted_right": (lambda s, v: torch.searchsorted(s, v, side="right"), SEQ, SEQ[:, :4]),
    "searchsorted_1d": (lambda s, v: torch.searchsorted(s, v), BND, XV.view(6, 6)),
    "diagonal": (lambda x: torch.diagonal(x, 1, 0, 2) * 2, X),
    "diagonal_neg": (lambda x: torch.diagonal(x, -2, -1, 1) + 1, X),
    "diagonal_scatter": (lambda x, s: torch.diagonal_scatter(x, s, 1, 0, 2), X, torch.randn(5, 4, generator=G)),
    "diagonal_scatter_neg": (lambda x, s: torch.diagonal_scatter(x, s, -1, 1, 2), X, torch.randn(4, 4, generator=G)),
    "new_empty_strided": (lambda x: torch.ops.aten.new_empty_strided(x, (3, 4), (1, 3)).fill_(2.0) + x[0, 0, 0], X),
    "cdist_p0": (lambda a, b: torch.cdist(a, b, p=0), A, B),
    "cdist_p1": (lambda a, b: torch.cdist(a, b, p=1), A, B),
    "cdist_p2": (lambda a, b: torch.cdist(a, b), A, B),
    "cdist_p3": (lambda a, b: torch.cdist(a, b, p=3), A, B),
    "cdist_p0.5": (lambda a, b: torch.cdist(a, b, p=0.5), A, B),
    "cdist_pinf": (lambda a, b: torch.cdist(a, b, p=float("inf")), A, B),
    "cdist_broadcast": (lambda a, b: torch.cdist(a, b), A[:1], B),
    "pdist_one_pair": (lambda x: torch.nn.functional.pdist(x), A[0, :2]),
    "pdist_one_row": (lambda x: torch.nn.functional.pdist(x), A[0, :1]),  # no pairs (op_db's samples)
    "pdist_p2": (lambda x: torch.nn.functional.pdist(x), A[0]),
    "pdist_p1": (lambda x: torch.nn.functional.pdist(x, 1), B[1]),
    "pdist_p3": (lambda x: torch.nn.functional.pdist(x, 3), B[0]),
    "pdist_pinf": (lambda x: torch.nn.functional.pdist(x, float("inf")), A[1]),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CASES))
def test_cases(compiled, guards, name):
    fn, *args = CASES[name]
    out, graphs = compiled(fn, *args)
    ref = fn(*args)
    torch.testing.assert_close(out, ref, equal_nan=True)
    assert out.dtype == ref.dtype
    assert {k for g in graphs for k in g.fallbacks} == set()
