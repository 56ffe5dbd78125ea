"""igamma / igammac (lower/igamma.py): one Triton kernel, no ATen call, against eager at fp32's
default tolerance and against an fp64 eager run, on a grid of every boundary value (0, -0, negative,
inf, NaN) crossed with itself, each series/fraction region, and a ~ x up to a = 300 (where eager
uses its asymptotic expansion instead)."""

from __future__ import annotations

import pytest
import torch

pytestmark = pytest.mark.triton

G = torch.Generator().manual_seed(0)
SP = torch.tensor([0.0, -0.0, -1.0, 1e-4, 0.3, 1.0, 1.05, 4.0, 25.0, 150.0, float("inf"), -float("inf"),
                   float("nan")])  # fmt: skip
A = torch.cat(
    [SP.repeat_interleave(len(SP)), torch.rand(40, generator=G) * 30, torch.rand(20, generator=G) * 300]
)
X = torch.cat([SP.repeat(len(SP)), torch.rand(40, generator=G) * 30, torch.rand(20, generator=G) * 300])


def _check(compiled, fn, a, x):
    out, graphs = compiled(fn, a, x)
    torch.testing.assert_close(out, fn(a, x), equal_nan=True)
    # as close to the float64 answer as eager's own result is, or closer
    ref64 = fn(a.double(), x.double())
    err = (out.double() - ref64).abs().nan_to_num()
    assert err.max() <= max((fn(a, x).double() - ref64).abs().nan_to_num().max().item(), 1e-7)
    assert {k for g in graphs for k in g.fallbacks} == set()
    assert sum(len(g.kernels) for g in graphs) == 1


@pytest.mark.parametrize("fn", [torch.igamma, torch.igammac], ids=["igamma", "igammac"])
def test_igamma_fp32(compiled, guards, fn):
    _check(compiled, fn, A, X)


def test_igamma_broadcast_scalar_operand(compiled, guards):
    """A 0-d operand and a non-contiguous one: the helpers see blocks of two shapes."""
    x = X[:60].reshape(6, 10).t()
    _check(compiled, lambda a, x: torch.igammac(a, x), torch.tensor(2.5), x)


@pytest.mark.slow
@pytest.mark.parametrize("fn", [torch.igamma, torch.igammac], ids=["igamma", "igammac"])
def test_igamma_fp64(compiled, guards, fn):
    a, x = A.double(), X.double()
    out, graphs = compiled(fn, a, x)
    torch.testing.assert_close(out, fn(a, x), equal_nan=True, rtol=1e-7, atol=1e-9)
    assert {k for g in graphs for k in g.fallbacks} == set()


@pytest.mark.parametrize("fn", [torch.igamma, torch.igammac], ids=["igamma", "igammac"])
def test_igamma_backward_wrt_x(fn):
    """The gradient in x (eager has none in a): a kernel forward, a kernel backward, no ATen call."""
    from fxlens.backend import compile_fx

    a, x = A[-60:].clone(), X[-60:].clone().requires_grad_()
    xe = x.detach().clone().requires_grad_()
    torch._dynamo.reset()
    compile_fx.COMPILED.clear()
    torch.compile(fn, backend="fxlens")(a, x).sum().backward()
    fn(a, xe).sum().backward()
    torch.testing.assert_close(x.grad, xe.grad)
    assert [(c.kind, dict(c.fallbacks)) for c in compile_fx.COMPILED] == [("forward", {}), ("backward", {})]
