"""Op-level tests: every lowered op against eager over shapes, strides, broadcasting and dtypes.

Each case asserts that fxlens compiled the op to Triton (at least one kernel, no ATen fallback),
that the result matches eager within the stated tolerance, and (through the `guards` fixture) that
no kernel wrote outside its output buffers.

Tolerances: fp32 atol=rtol=1e-5; fp16 1e-2; bf16 2e-2 (fp16/bf16 are computed in fp32, eager
rounds intermediates, so a few ulps differ); integers and bools exact.
"""

from __future__ import annotations

import zlib

import pytest
import torch
import torch.nn.functional as F

pytestmark = pytest.mark.triton

TOL = {torch.float32: 1e-5, torch.float16: 1e-2, torch.bfloat16: 2e-2, torch.float64: 1e-9}
FLOATS = [torch.float32, torch.float16, torch.bfloat16]
SHAPES = [(7,), (4, 5), (2, 3, 8)]


def stable_seed(*parts) -> int:
    """A seed from the case's shape and dtype that is the same in every process: `hash()` of a tuple
    with a str in it is salted per interpreter (PYTHONHASHSEED), so a failure did not reproduce."""
    return zlib.crc32(repr(parts).encode()) % 1000


def make(shape, dtype, positive=False, strided=False):
    g = torch.Generator().manual_seed(stable_seed(shape, str(dtype)))
    if dtype == torch.bool:
        t = torch.rand(shape, generator=g) > 0.5
    elif not dtype.is_floating_point:
        low = 1 if positive else -5  # positive ints are valid divisors (never 0)
        t = torch.randint(low, 6, shape, generator=g, dtype=dtype)
    else:
        t = torch.randn(shape, generator=g).to(dtype)
        if positive:
            t = t.abs() + 0.5
    if strided and len(shape) >= 2:  # same values, transposed storage: a non-contiguous input
        t = t.transpose(-1, -2).contiguous().transpose(-1, -2)
    return t


def cases(dtype):
    """All shapes (one non-contiguous) for fp32; one 3-D shape for the half types, to keep the run short."""
    if dtype == torch.float32:
        return [((7,), False), ((4, 5), True), ((2, 3, 8), False)]
    return [((2, 3, 8), False)]


def check(compiled, guards, fn, *args, expect_kernels=True):
    out, graphs = compiled(fn, *args)
    ref = fn(*args)
    outs, refs = (out, ref) if isinstance(out, tuple) else ((out,), (ref,))
    for o, r in zip(outs, refs, strict=True):
        assert o.shape == r.shape and o.dtype == r.dtype
        if r.dtype.is_floating_point:
            tol = TOL[r.dtype]
            torch.testing.assert_close(o.float(), r.float(), atol=tol, rtol=tol, equal_nan=True)
        else:
            assert torch.equal(o, r)
    assert graphs, "fxlens did not compile"
    fallbacks = {k: v for g in graphs for k, v in g.fallbacks.items()}
    assert fallbacks == {}, f"ran as ATen fallbacks: {fallbacks}"
    if expect_kernels:
        assert sum(len(g.kernels) for g in graphs) >= 1
    guards.check()


UNARY = {
    "neg": torch.neg, "abs": torch.abs, "exp": torch.exp, "sin": torch.sin, "cos": torch.cos,
    "tanh": torch.tanh, "sigmoid": torch.sigmoid, "erf": torch.erf, "relu": torch.relu,
    "floor": torch.floor, "ceil": torch.ceil, "trunc": torch.trunc, "square": lambda x: x * x,
    "pow1.5": lambda x: x.abs().pow(1.5), "gelu": F.gelu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": F.silu, "sign": torch.sign, "isnan": lambda x: torch.isnan(x / x), "clamp": lambda x: x.clamp(-0.5, 0.7),
    "expm1": torch.expm1, "leaky": F.leaky_relu, "elu": F.elu, "softplus": F.softplus,
}  # fmt: skip
POSITIVE = {"log": torch.log, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "reciprocal": torch.reciprocal,
            "log1p": torch.log1p, "log2": torch.log2}  # fmt: skip


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(UNARY) + sorted(POSITIVE))
def test_unary(compiled, guards, name, dtype):
    fn = UNARY.get(name) or POSITIVE[name]
    for shape, strided in cases(dtype):
        check(compiled, guards, fn, make(shape, dtype, positive=name in POSITIVE, strided=strided))


BINARY = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "maximum": torch.maximum,
    "minimum": torch.minimum, "add_alpha": lambda a, b: torch.add(a, b, alpha=2),
    "eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge,
    "where": lambda a, b: torch.where(a > b, a, b), "remainder": torch.remainder, "div_floor":
    lambda a, b: torch.div(a, b, rounding_mode="floor"),
}  # fmt: skip


@pytest.mark.parametrize("dtype", [*FLOATS, torch.int32, torch.int64])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_broadcast(compiled, guards, name, dtype):
    fn = BINARY[name]
    check(compiled, guards, fn, make((2, 3, 8), dtype), make((8,), dtype, positive=True))  # broadcast
    if dtype in (torch.float16, torch.bfloat16):
        return
    check(compiled, guards, fn, make((4, 5), dtype), make((4, 5), dtype, positive=True, strided=True))
    check(compiled, guards, fn, make((3, 1), dtype), make((1, 6), dtype, positive=True))  # both broadcast
    if name not in ("maximum", "minimum"):
        check(compiled, guards, lambda a: fn(a, 3), make((4, 5), dtype))  # scalar


@pytest.mark.parametrize("dtype", [torch.bool, torch.int32])
def test_logical_bitwise(compiled, guards, dtype):
    a, b = make((4, 6), dtype), make((4, 6), dtype)
    check(compiled, guards, lambda a, b: (a & b, a | b, a ^ b, ~a), a, b)
    check(
        compiled,
        guards,
        lambda a, b: (torch.logical_and(a, b), torch.logical_or(a, b), torch.logical_not(a)),
        a,
        b,
    )


@pytest.mark.parametrize("src", [torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.bool])
@pytest.mark.parametrize("dst", [torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.bool])
def test_casts(compiled, guards, src, dst):
    if src == dst:
        pytest.skip("no-op")
    check(compiled, guards, lambda x: x.to(dst) + 0 if dst != torch.bool else x.to(dst), make((4, 5), src))


def test_constants_iota(compiled, guards):
    check(compiled, guards, lambda x: x + torch.arange(5) * 0.5 + torch.ones(5), make((4, 5), torch.float32))
    check(
        compiled,
        guards,
        lambda x: (x, torch.full_like(x, 3.0), torch.zeros_like(x, dtype=torch.int64)),
        make((3, 4), torch.float32),
    )


REDUCTIONS = {
    "sum_last": lambda x: x.sum(-1), "sum_first": lambda x: x.sum(0), "sum_all": lambda x: x.sum(),
    "mean_keep": lambda x: x.mean(-1, keepdim=True), "amax": lambda x: x.amax(-1), "amin0": lambda x: x.amin(0),
    "prod": lambda x: x.prod(-1), "argmax": lambda x: x.argmax(-1), "argmin0": lambda x: x.argmin(0),
    "var": lambda x: x.var(-1), "var_mean": lambda x: torch.var_mean(x, -1, correction=0),
    "std": lambda x: x.std(0), "max_dim": lambda x: x.max(-1), "any": lambda x: (x > 1).any(-1),
    "softmax": lambda x: x.softmax(-1), "log_softmax": lambda x: x.log_softmax(0),
    "layer_norm": lambda x: F.layer_norm(x, x.shape[-1:]), "sum_middle": lambda x: x.sum(1) if x.dim() > 2 else x.sum(0),
}  # fmt: skip


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions(compiled, guards, name, dtype):
    fn = REDUCTIONS[name]
    for shape, strided in cases(dtype):
        x = make(shape, dtype, strided=strided)
        if name == "prod":
            x = x * 0.5 + 1
        check(compiled, guards, fn, x)


@pytest.mark.parametrize("name", ["sum_last", "sum_first", "amax", "argmax", "any", "sum_all"])
def test_int_reductions(compiled, guards, name):
    check(compiled, guards, REDUCTIONS[name], make((4, 6), torch.int64))


@pytest.mark.parametrize("name", ["sum_last", "argmax", "softmax", "var_mean", "layer_norm", "max_dim"])
def test_looped_reductions(compiled, guards, monkeypatch, name):
    monkeypatch.setenv("FXLENS_PERSISTENT_RMAX", "4")  # rows of 37 reduce in a loop of 4-wide blocks
    check(compiled, guards, REDUCTIONS[name], make((5, 37), torch.float32))


VIEWS = {
    "view": lambda x: (x + 1).view(-1, 2) * 2, "reshape_t": lambda x: (x.t() + 1).reshape(-1) * 2,
    "permute": lambda x: (x + 1).permute(1, 0) * 2, "expand": lambda x: (x[:1] + 1).expand(4, 6) * 2,
    "unsqueeze": lambda x: (x + 1).unsqueeze(1) * 2, "squeeze": lambda x: (x[:1] + 1).squeeze(0) * 2,
    "slice": lambda x: x[1:3, ::2] * 2, "select": lambda x: x[2] * 2 + x[:, 1].sum(),
    "as_strided": lambda x: x.as_strided((3, 2), (1, 6)) * 2, "transpose_add": lambda x: x.t() + x.t(),
    "cat": lambda x: torch.cat([x * 2, x[:, :2], x + 1], 1), "split": lambda x: [a * 2 for a in x.split([2, 4], 1)],
    "chunk_stack": lambda x: torch.stack(x.chunk(2, 0), 0) + 1,
}  # fmt: skip


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64])
@pytest.mark.parametrize("name", sorted(VIEWS))
def test_views(compiled, guards, name, dtype):
    fn = VIEWS[name]
    check(compiled, guards, lambda x: tuple(fn(x)) if name == "split" else fn(x), make((4, 6), dtype))


def test_gathers(compiled, guards):
    w = make((10, 6), torch.float32)
    idx = torch.tensor([[1, 9, 0], [3, 3, -1]])
    check(compiled, guards, lambda w, i: F.embedding(i.clamp(min=0), w) * 2, w, idx)
    check(compiled, guards, lambda w, i: w.index_select(1, i[0].clamp(0, 5)) + 1, w, idx)
    check(compiled, guards, lambda w, i: w[i] + 1, w, idx)
    check(compiled, guards, lambda w, i: torch.gather(w, 1, i.clamp(0, 5).repeat(5, 1)[:10]) + 1, w, idx)


def test_input_mutation_guarded(compiled, guards):
    flat = torch.full((40,), float("nan"))
    x = flat[10:30].view(4, 5)
    x.copy_(make((4, 5), torch.float32))
    ref = x.clone().mul_(2).add_(1)

    def f(x):
        x.mul_(2).add_(1)
        return x.sum()

    out, graphs = compiled(f, x)
    torch.testing.assert_close(x, ref)
    torch.testing.assert_close(out, ref.sum())
    assert flat[:10].isnan().all() and flat[30:].isnan().all()
    assert sum(len(g.kernels) for g in graphs) >= 1


NAN_OPS = {
    "amax": lambda x: x.amax(-1),
    "amin": lambda x: x.amin(-1),
    "argmax": lambda x: x.argmax(-1),
    "argmin": lambda x: x.argmin(-1),
    "max_dim": lambda x: x.max(-1),
    "maximum": lambda x: torch.maximum(torch.full_like(x, 0.3), x),
    "minimum": lambda x: torch.minimum(x, torch.full_like(x, 0.3)),
    "relu": torch.relu,
    "clamp": lambda x: x.clamp(-0.5, 0.5),
}


@pytest.mark.parametrize("looped", [False, True])
@pytest.mark.parametrize("name", sorted(NAN_OPS))
def test_nan_propagates_like_eager(compiled, guards, monkeypatch, name, looped):
    # torch's max/min/argmax/relu/clamp propagate NaN (the first NaN wins argmax/argmin); Triton's
    # default maximum/minimum would drop it on the GPU
    if looped:
        monkeypatch.setenv("FXLENS_PERSISTENT_RMAX", "4")
    x = make((5, 37), torch.float32)
    x[1, 3] = x[1, 30] = x[3, 36] = float("nan")
    x[4] = float("nan")
    check(compiled, guards, NAN_OPS[name], x)
