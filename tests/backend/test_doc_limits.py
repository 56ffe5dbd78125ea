"""docs/backend.md's "Limits" table stays true: each row names a case below, and says whether it
compiles to Triton kernels or runs as an ATen fallback; the test compiles the case and checks.

The table once listed sort/topk, cummax, logcumsumexp, 3-D pooling and adaptive_max_pool2d as
fallbacks long after all six compiled to kernels; this test is what keeps that from recurring.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

pytestmark = pytest.mark.triton

DOC = Path(__file__).resolve().parents[2] / "docs" / "backend.md"

# case -> (function, inputs, the aten op whose fate the row states)
CASES = {
    "sort": (lambda x: torch.sort(x, dim=-1).values, lambda: [torch.randn(4, 16)], "aten.sort"),
    "topk": (lambda x: torch.topk(x, 3).values, lambda: [torch.randn(4, 16)], "aten.topk"),
    "cummax": (lambda x: torch.cummax(x, 1).values, lambda: [torch.randn(4, 16)], "aten.cummax"),
    "cummin": (lambda x: torch.cummin(x, 1).values, lambda: [torch.randn(4, 16)], "aten.cummin"),
    "logcumsumexp": (lambda x: torch.logcumsumexp(x, 1), lambda: [torch.randn(4, 16)], "aten.logcumsumexp"),
    "avg_pool3d": (lambda x: F.avg_pool3d(x, 2), lambda: [torch.randn(1, 2, 4, 4, 4)], "aten.avg_pool3d"),
    "adaptive_avg_pool3d": (
        lambda x: F.adaptive_avg_pool3d(x, 2),
        lambda: [torch.randn(1, 2, 4, 4, 4)],
        "aten._adaptive_avg_pool3d",
    ),
    "adaptive_max_pool2d": (
        lambda x: F.adaptive_max_pool2d(x, 3),
        lambda: [torch.randn(1, 2, 7, 7)],
        "aten.adaptive_max_pool2d",
    ),
    "matmul": (lambda a, b: a @ b, lambda: [torch.randn(4, 8), torch.randn(8, 3)], "aten.mm"),
    "convolution": (
        lambda x, w: F.conv2d(x, w),
        lambda: [torch.randn(1, 2, 5, 5), torch.randn(3, 2, 3, 3)],
        "aten.convolution",
    ),
    "max_pool2d window over 64 elements": (
        lambda x: F.max_pool2d(x, 9),
        lambda: [torch.randn(1, 1, 9, 9)],
        "aten.max_pool2d_with_indices",
    ),
    "index_put with a boolean mask": (
        lambda x, m: x.index_put((m,), torch.tensor(1.0)),
        lambda: [torch.randn(6), torch.rand(6) > 0.5],
        "aten.index_put",
    ),
    "randint": (lambda x: x + torch.randint(0, 5, x.shape), lambda: [torch.randn(8)], "aten.randint"),
}


def _rows() -> dict[str, str]:
    """{case: "kernel" | "fallback"} from the table between the limits markers of docs/backend.md."""
    text = DOC.read_text()
    block = text.split("<!-- limits:start -->")[1].split("<!-- limits:end -->")[0]
    rows = {}
    for line in block.splitlines():
        m = re.match(r"\|\s*`([^`]+)`\s*\|\s*(kernel|fallback)\s*\|", line)
        if m:
            rows[m.group(1)] = m.group(2)
    return rows


def test_every_documented_limit_has_a_case():
    assert set(_rows()) == set(CASES)


@pytest.mark.parametrize("case", sorted(CASES))
def test_documented_limit_holds(case, compiled):
    fn, inputs, op = CASES[case]
    args = inputs()
    out, graphs = compiled(fn, *args)
    fallbacks = {name for g in graphs for name in g.fallback_reasons}
    fell_back = any(f == op or f.startswith(op + ".") for f in fallbacks)
    want = _rows()[case]
    assert fell_back == (want == "fallback"), f"{case}: docs say {want}; fallbacks {sorted(fallbacks)}"
    if want == "kernel":
        assert sum(len(g.kernels) for g in graphs) >= 1
