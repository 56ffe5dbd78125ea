"""Op-level tests for the lowerings added after the first 126: integer division, scans, pooling
(forward and backward) and indexed stores. Random ops are in test_ops_rng.py.

Each case compiles with fxlens, asserts no ATen fallback and at least one kernel, compares with eager
(test_ops.check: fp32 atol=rtol=1e-5, fp16 1e-2, bf16 2e-2, integers exact; scans get a looser
bound, stated below) and checks the guard regions around every allocated buffer.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from test_ops import FLOATS, check, make

from fxlens.backend import compile_fx

pytestmark = pytest.mark.triton


def _fallbacks(graphs) -> dict:
    return {k: v for g in graphs for k, v in g.fallbacks.items()}


# --- integer division: torch's rounding, negative operands --------------------------------------
INTDIV = {
    "div_floor": lambda a, b: torch.div(a, b, rounding_mode="floor"),
    "div_trunc": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
    "floor_divide": lambda a, b: a // b,
    "remainder": lambda a, b: a % b,
    "fmod": torch.fmod,
}


def _divisor(shape, dtype, strided=False):
    b = make(shape, dtype, strided=strided)
    return torch.where(b == 0, torch.full_like(b, 3), b)  # both signs, never zero


@pytest.mark.parametrize(
    "dtype", [torch.int64, torch.int32, torch.int8, torch.float32, torch.float16, torch.float64]
)
@pytest.mark.parametrize("name", sorted(INTDIV))
def test_integer_division(compiled, guards, name, dtype):
    fn = INTDIV[name]
    a = make((4, 6), dtype) * 3  # values -15..15 (ints): quotients of both signs and remainders
    check(compiled, guards, fn, a, _divisor((4, 6), dtype, strided=True))
    if dtype in (torch.float16, torch.int8, torch.float64):
        return
    check(compiled, guards, fn, make((2, 3, 6), dtype) * 3, _divisor((6,), dtype))  # broadcast
    check(compiled, guards, lambda x: fn(x, -4), a)  # negative scalar divisor
    check(compiled, guards, lambda x: fn(x, 3), a)


def test_integer_division_exhaustive_signs(compiled, guards):
    # every (a, b) in [-7, 7] x [-4, 4] \ {0}: where C truncation and Python flooring disagree
    a = torch.arange(-7, 8).repeat_interleave(8)
    b = torch.tensor([-4, -3, -2, -1, 1, 2, 3, 4]).repeat(15)
    check(compiled, guards, lambda a, b: tuple(f(a, b) for f in INTDIV.values()), a, b)


# --- scans ---------------------------------------------------------------------------------------
def _close(out, ref, tol):
    assert out.shape == ref.shape and out.dtype == ref.dtype
    if ref.dtype.is_floating_point:
        torch.testing.assert_close(out.float(), ref.float(), atol=tol, rtol=tol)
    else:
        assert torch.equal(out, ref)


SCANS = {
    "cumsum_last": lambda x: x.cumsum(-1),
    "cumsum_first": lambda x: x.cumsum(0),
    "cumsum_mid": lambda x: x.cumsum(1) if x.dim() > 2 else x.cumsum(0),
    "cumprod_last": lambda x: x.cumprod(-1),
    "cumsum_epilogue": lambda x: x.cumsum(-1) * 2 + 1,
}


@pytest.mark.parametrize(
    "dtype,looped",
    [(torch.float32, False), (torch.float32, True), (torch.int64, True)]
    + [(dt, False) for dt in (torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.bool)],
)
@pytest.mark.parametrize("name", sorted(SCANS))
def test_scans(compiled, guards, monkeypatch, name, dtype, looped):
    if looped:  # rows longer than 4 loop over 4-wide blocks, carrying the running total
        monkeypatch.setenv("FXLENS_PERSISTENT_RMAX", "4")
    if name.startswith("cumprod") and dtype == torch.bool:
        pytest.skip("cumprod of bool is not a thing eager does either")
    fn = SCANS[name]
    shapes = (
        [((11,), False), ((5, 9), True), ((2, 3, 7), False)] if dtype == torch.float32 else [((5, 9), True)]
    )
    for shape, strided in shapes:
        x = make(shape, dtype, strided=strided)
        if dtype.is_floating_point and name.startswith("cumprod"):
            x = (x * 0.3 + 1).to(dtype)  # keep products in range
        out, graphs = compiled(fn, x)
        # fp16/bf16: eager rounds each partial sum to the half type, we keep fp32 partials
        tol = {torch.float32: 1e-5, torch.float16: 2e-2, torch.bfloat16: 6e-2}.get(dtype, 0)
        _close(out, fn(x), tol)
        assert _fallbacks(graphs) == {} and sum(len(g.kernels) for g in graphs) >= 1
        guards.check()


def test_cumsum_backward_and_dtype_arg(compiled, guards):
    x = make((4, 9), torch.float32).requires_grad_()
    g = make((4, 9), torch.float32)
    check(compiled, guards, lambda x: x.cumsum(1, dtype=torch.float64), x.detach())
    y = x.detach().clone().requires_grad_()
    out, graphs = compiled(lambda x: x.cumsum(0) * 2, y)
    out.backward(g)
    x.cumsum(0).mul(2).backward(g)
    torch.testing.assert_close(y.grad, x.grad)
    assert _fallbacks(graphs) == {}, "flip (cumsum's backward) and cumsum are lowered"


# --- pooling (forward and backward) --------------------------------------------------------------
POOLS = {
    "max2": lambda x: F.max_pool2d(x, 2),
    "max3_s2_p1": lambda x: F.max_pool2d(x, 3, 2, 1),
    "max_indices": lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True),
    "max_dilated_ceil": lambda x: F.max_pool2d(x, 3, 2, 1, dilation=2, ceil_mode=True),
    "max_rect": lambda x: F.max_pool2d(x, (2, 3), (1, 2)),
    "avg2": lambda x: F.avg_pool2d(x, 2),
    "avg3_s2_p1": lambda x: F.avg_pool2d(x, 3, 2, 1),
    "avg_no_pad_count_ceil": lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
    "avg_divisor": lambda x: F.avg_pool2d(x, (2, 3), 2, 1, divisor_override=5),
    "adaptive3": lambda x: F.adaptive_avg_pool2d(x, 3),
    "adaptive_4x5": lambda x: F.adaptive_avg_pool2d(x, (4, 5)),
    "adaptive_up": lambda x: F.adaptive_avg_pool2d(x, (11, 8)),
}
GRAD_TOL = {torch.float32: 1e-5, torch.float16: 1e-2, torch.bfloat16: 2e-2}


def check_grad(compiled, guards, fn, x):
    """Forward and backward through fxlens against eager: values, input gradient, no fallbacks."""
    g = torch.Generator().manual_seed(1)
    xc, xe = x.detach().clone().requires_grad_(), x.detach().clone().requires_grad_()
    out, graphs = compiled(fn, xc)
    ref = fn(xe)
    out0, ref0 = (out[0], ref[0]) if isinstance(out, tuple) else (out, ref)
    tol = GRAD_TOL[x.dtype]
    torch.testing.assert_close(out0.float(), ref0.float(), atol=tol, rtol=tol)
    if isinstance(out, tuple):
        assert torch.equal(out[1], ref[1]), "indices"
    go = torch.randn(out0.shape, generator=g).to(x.dtype)
    out0.backward(go)
    ref0.backward(go)
    torch.testing.assert_close(xc.grad.float(), xe.grad.float(), atol=tol, rtol=tol)
    graphs = list(compile_fx.COMPILED)  # the backward graph compiles at the first backward call
    assert {g.kind for g in graphs} == {"forward", "backward"}
    assert _fallbacks(graphs) == {}, f"ran as ATen fallbacks: {_fallbacks(graphs)}"
    guards.check()


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(POOLS))
def test_pooling(compiled, guards, name, dtype):
    fn = POOLS[name]
    check_grad(compiled, guards, fn, make((2, 3, 9, 7), torch.float32).to(dtype))
    if dtype == torch.float32:
        x = make((3, 7, 9), torch.float32).transpose(-1, -2)  # 3-D input, non-contiguous
        check_grad(compiled, guards, fn, x)


def test_max_pool_nan_and_ties_like_eager(compiled, guards):
    x = torch.zeros(1, 2, 6, 6)
    x[0, 0, 1, 1] = x[0, 0, 3, 4] = float("nan")
    x[0, 1, :, :3] = 1.0  # ties: the first index in the window wins
    check(compiled, guards, lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True), x)
    x = torch.full((1, 1, 4, 4), float("-inf"))  # every element -inf: index of the first valid one
    check(compiled, guards, lambda x: F.max_pool2d(x, 2, 2, 1, return_indices=True), x)


# --- indexed stores --------------------------------------------------------------------------------
def _setitem(x, i, v):
    x = x * 1
    x[i] = v
    return x + 1


INDEX_PUT = {
    "rows": (lambda x, i, v: x.index_put((i,), v) * 2, [0, 2, -1], (3, 6)),
    "rows_acc_dups": (lambda x, i, v: x.index_put((i,), v, accumulate=True), [0, 2, 2, 0, -1], (5, 6)),
    "broadcast_values": (lambda x, i, v: x.index_put((i,), v), [1, 3], (6,)),
    "setitem": (_setitem, [1, 4], (2, 6)),
    "second_dim": (lambda x, i, v: torch.ops.aten.index_put(x, [None, i], v), [5, 0], (5, 2)),
    "second_dim_acc": (lambda x, i, v: torch.ops.aten.index_put(x, [None, i], v, True), [1, 1, 0], (5, 3)),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.int32])
@pytest.mark.parametrize("name", sorted(INDEX_PUT))
def test_index_put(compiled, guards, name, dtype):
    fn, ind, vshape = INDEX_PUT[name]
    x = make((5, 6), dtype, strided=True)
    check(compiled, guards, fn, x, torch.tensor(ind), make(vshape, dtype))


def test_index_put_two_indices_and_input_mutation(compiled, guards):
    x, v = make((5, 6), torch.float32), make((4,), torch.float32)
    i, j = torch.tensor([0, 4, 4, 2]), torch.tensor([1, 5, 5, -1])
    check(compiled, guards, lambda x, i, j, v: x.index_put((i, j), v, accumulate=True), x, i, j, v)
    ref = x.clone()
    ref[i[:2], j[:2]] = v[:2]

    def f(x, i, j, v):
        x[i, j] = v  # index_put_ on a graph input: a mutation copied back
        return x.sum()

    xc = x.clone()
    out, graphs = compiled(f, xc, i[:2], j[:2], v[:2])
    torch.testing.assert_close(xc, ref)
    torch.testing.assert_close(out, ref.sum())
    assert _fallbacks(graphs) == {}


def test_index_put_bf16_accumulate_is_a_fallback(compiled):
    # no bf16 atomics under the interpreter: recorded as a fallback, still correct
    x, v = make((5, 6), torch.bfloat16), make((3, 6), torch.bfloat16)
    i = torch.tensor([0, 0, 3])
    out, graphs = compiled(lambda x, i, v: x.index_put((i,), v, accumulate=True), x, i, v)
    torch.testing.assert_close(out, x.index_put((i,), v, accumulate=True))
    assert _fallbacks(graphs) == {"aten.index_put.default": 1}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64])
def test_scatter_add_and_wide_scatter(compiled, guards, dtype):
    x = make((6, 5), dtype)
    g = torch.Generator().manual_seed(3)
    ind = torch.randint(0, 6, (4, 5), generator=g)
    src = make((4, 5), dtype)
    check(compiled, guards, lambda x, i, s: x.scatter_add(0, i, s), x, ind, src)
    check(compiled, guards, lambda x, i, s: x.scatter_add(1, i, s), x, ind[:, :3].clamp(max=4), src[:, :3])
    # scatter with more than 8 positions per row: indexed stores (distinct indices: no race)
    wide = torch.stack([torch.randperm(40, generator=g)[:20] for _ in range(3)])
    check(
        compiled, guards, lambda x, i, s: x.scatter(1, i, s), make((3, 40), dtype), wide, make((3, 20), dtype)
    )


HOOK_CASES = {
    "max_pool_indices": (lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True), lambda: (make((2, 3, 8, 8), torch.float32),)),
    "avg_adaptive": (lambda x: F.adaptive_avg_pool2d(F.avg_pool2d(x, 2), 3), lambda: (make((2, 3, 8, 8), torch.float32),)),
    "scans": (lambda x: x.cumsum(2).cumprod(-1), lambda: (make((2, 3, 8, 8), torch.float32) * 0.1,)),
    # accumulate=True: a replay of the scatter kernel must start from the copied destination (not
    # zeros) and add exactly once
    "index_put_acc": (lambda x, i, v: x.index_put((i,), v, accumulate=True) * 2,
                      lambda: (make((5, 4), torch.float32), torch.tensor([0, 2, 2]), make((3, 4), torch.float32))),
    "int_division": (lambda a, b: (a // b, a % b, torch.fmod(a, b)),
                     lambda: (make((4, 5), torch.int64) * 3, torch.tensor([-3, -2, 1, 2, 5]))),
}  # fmt: skip


@pytest.mark.parametrize("hook", ["nofusion", "check_kernels", "kernel_fallback"])
@pytest.mark.parametrize("name", sorted(HOOK_CASES))
def test_new_kernels_under_the_bisector_hooks(compiled, monkeypatch, name, hook):
    """fxlens_nofusion, FXLENS_CHECK_KERNELS (fp64 ATen replay agrees) and FXLENS_KERNEL_FALLBACK
    (every kernel replayed as its ATen ops) give eager's results on the new lowerings."""
    from fxlens.backend import runtime

    fn, inputs = HOOK_CASES[name]
    args = inputs()
    logged = []
    if hook == "check_kernels":
        monkeypatch.setattr(runtime, "log_json", lambda kind, obj: logged.append(obj))
        monkeypatch.setenv("FXLENS_CHECK_KERNELS", "1")
    if hook == "kernel_fallback":
        monkeypatch.setenv("FXLENS_KERNEL_FALLBACK", "0,1,2,3")
    out, graphs = compiled(fn, *args, backend="fxlens_nofusion" if hook == "nofusion" else "fxlens")
    for o, r in zip(out if isinstance(out, tuple) else (out,), _as_tuple(fn(*args)), strict=True):
        torch.testing.assert_close(o, r, atol=1e-5, rtol=1e-5)
    assert _fallbacks(graphs) == {}
    if hook == "check_kernels":
        assert len(logged) == sum(len(g.kernels) for g in graphs) and all(c["ok"] for c in logged), logged


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def test_convnet_lowers_its_pooling():
    # model level: tests/backend/models.py's conv net (conv, batchnorm, relu, max_pool2d, linear);
    # only convolution and matmuls stay ATen calls
    import copy

    from models import ConvNet

    torch.manual_seed(0)
    m, x = ConvNet(), torch.randn(2, 3, 8, 8)
    ref_m = copy.deepcopy(m)
    torch._dynamo.reset()
    compile_fx.COMPILED.clear()
    out = torch.compile(m, backend="fxlens")(x)
    ref = ref_m(x)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-4)
    out.square().sum().backward()
    ref.square().sum().backward()
    for p, q in zip(m.parameters(), ref_m.parameters(), strict=True):
        torch.testing.assert_close(p.grad, q.grad, atol=1e-5, rtol=1e-4)
    fallbacks = _fallbacks(compile_fx.COMPILED)
    assert not [op for op in fallbacks if "pool" in op], fallbacks
    assert set(fallbacks) <= {
        "aten.convolution.default",
        "aten.convolution_backward.default",
        "aten.addmm.default",
        "aten.mm.default",
    }, fallbacks
