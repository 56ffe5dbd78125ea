"""scatter_reduce / index_reduce with sum, mean, amax, amin (lower/scatter.py): atomics over the
updates, identity stores for include_self=False, NaN passes. prod stays an ATen call (no atomic)."""

from __future__ import annotations

import pytest
import torch

pytestmark = pytest.mark.triton

G = torch.Generator().manual_seed(0)
X = torch.randn(10, 5, generator=G)
SRC = torch.randn(6, 5, generator=G)
IND = torch.randint(0, 10, (6, 5), generator=G)
XN, SRCN = X.clone(), SRC.clone()
SRCN[0, 0] = float("nan")
XN[IND[1, 1], 1] = float("nan")


def _run(compiled, fn, *args, expect_fallback=None):
    out, graphs = compiled(fn, *args)
    torch.testing.assert_close(out, fn(*args), equal_nan=True)
    fallbacks = {k for g in graphs for k in g.fallbacks}
    assert fallbacks == ({expect_fallback} if expect_fallback else set())


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["sum", "mean", "amax", "amin"])
def test_scatter_reduce(compiled, guards, reduce, include_self):
    def fn(x, i, s):
        return x.scatter_reduce(0, i, s, reduce, include_self=include_self)

    _run(compiled, fn, X, IND, SRC)
    _run(compiled, fn, XN, IND, SRCN)  # NaN in the destination and in the updates


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["sum", "amax", "amin"])
def test_scatter_reduce_int(compiled, guards, reduce, include_self):
    def fn(x, i, s):
        return x.scatter_reduce(1, i, s, reduce, include_self=include_self)

    _run(compiled, fn, (X * 5).int(), IND % 5, (SRC * 5).int())


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["mean", "amax", "amin"])
def test_index_reduce(compiled, guards, reduce, include_self):
    def fn(x, i, s):
        return x.index_reduce(0, i, s, reduce, include_self=include_self)

    _run(compiled, fn, XN, torch.tensor([3, 1, 3, 7, 1, 0]), SRCN)
    _run(compiled, fn, torch.tensor(2.0), torch.tensor([0]), torch.tensor(-1.5))  # 0-d, as in op_db


def test_prod_and_int_mean_stay_aten(compiled, guards):
    _run(compiled, lambda x, i, s: x.scatter_reduce(0, i, s, "prod"), X, IND, SRC,
         expect_fallback="aten.scatter_reduce.two")  # fmt: skip
    _run(compiled, lambda x, i, s: x.scatter_reduce(1, i, s, "mean"), (X * 5).int(), IND % 5, (SRC * 5).int(),
         expect_fallback="aten.scatter_reduce.two")  # fmt: skip


@pytest.mark.slow  # Triton compiles each pass's kernel to PTX
def test_passes_compile_for_sm90():
    from test_cuda_codegen import _cuda_kernels, _ptx

    def fn(x, i, s):
        return (x.scatter_reduce(0, i, s, "amax", include_self=False), x.scatter_reduce(0, i, s, "mean"))

    recs = _cuda_kernels(fn, ((10, 5), torch.float32), ((6, 5), torch.int64), ((6, 5), torch.float32))
    assert any("tl.atomic_max(" in r["source"] for r in recs)
    for rec in recs:
        assert ".entry " + rec["name"] in _ptx(rec)


@pytest.mark.parametrize(
    "op,reduce,include_self",
    [("scatter_reduce", "mean", True), ("scatter_reduce", "amax", False), ("scatter_reduce", "amin", True)]
    + [("scatter_reduce", "sum", False), ("index_reduce", "mean", False)],
)
def test_reductions_under_the_bisect_hooks(compiled, monkeypatch, op, reduce, include_self):
    """The bisect's hooks replay a kernel's FX nodes with ATen (FXLENS_CHECK_KERNELS against fp64,
    FXLENS_KERNEL_FALLBACK in its place). A pass that leaves a step (the identities, a mean's sum or
    count, amax before its NaN pass) is not the op's value: it is never replayed as the whole op
    (that flagged correct kernels as wrong), nor is a kernel whose nodes need a tensor it never
    reads (the mean's quotient reads the sum and count, not the updates). Every check passes and
    every kernel in turn as ATen gives eager's result."""
    from fxlens.backend import runtime

    if op == "scatter_reduce":
        args = (XN, IND, SRCN) if reduce != "mean" else (X, IND, SRC)

        def fn(x, i, s):
            return x.scatter_reduce(0, i, s, reduce, include_self=include_self) * 2 + 1
    else:
        args = (X, torch.tensor([3, 1, 3, 7, 1, 0]), SRC)

        def fn(x, i, s):
            return x.index_reduce(0, i, s, reduce, include_self=include_self) - x

    logged: list = []
    monkeypatch.setattr(runtime, "log_json", lambda name, obj: logged.append(obj))
    monkeypatch.setenv("FXLENS_CHECK_KERNELS", "1")
    out, graphs = compiled(fn, *args)
    torch.testing.assert_close(out, fn(*args), equal_nan=True)
    assert logged and [o["name"] for o in logged if not o["ok"]] == []
    monkeypatch.delenv("FXLENS_CHECK_KERNELS")
    for k in range(len(graphs[0].kernels)):  # each kernel in turn as ATen, the others as Triton
        monkeypatch.setenv("FXLENS_KERNEL_FALLBACK", f"inference:{k}")
        out, _ = compiled(fn, *args)
        torch.testing.assert_close(out, fn(*args), equal_nan=True)
