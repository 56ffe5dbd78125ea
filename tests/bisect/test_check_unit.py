"""The accuracy check in-process: outputs and gradients against fp64, the user's state untouched."""

import pytest

torch = pytest.importorskip("torch")

from fxlens.bisect.check import compare_result, has_random_ops, references  # noqa: E402


class Block(torch.nn.Module):
    def forward(self, x, w):
        return torch.relu(x @ w) * 3


def _inputs():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(4, 8, generator=g)
    w = torch.randn(8, 8, generator=g).requires_grad_(True)
    return [x, w]


def _bad(divs):
    return {d.what for d in divs if not d.ok}


def test_right_result_passes_including_gradients():
    gm = torch.fx.symbolic_trace(Block())
    args = _inputs()
    refs = references(gm, args)
    divs = compare_result(args, gm(*args), refs, check_grads=True)
    assert {d.what for d in divs} == {"output 0", "grad of input 1"} and not _bad(divs)


def test_wrong_gradient_with_right_output_is_caught():
    gm = torch.fx.symbolic_trace(Block())
    args = _inputs()
    refs = references(gm, args)
    y = gm(*args)
    wrong_grad = y + (y - y.detach()) * 0.5  # same values, gradient 1.5x
    assert _bad(compare_result(args, wrong_grad, refs, check_grads=True)) == {"grad of input 1"}
    assert _bad(compare_result(args, y + 1, refs, check_grads=False)) == {"output 0"}


def test_references_leave_rng_and_inputs_alone():
    gm = torch.fx.symbolic_trace(Block())
    args = _inputs()
    before = [a.clone() for a in args]
    torch.manual_seed(3)
    expected = torch.rand(3)
    torch.manual_seed(3)
    references(gm, args)
    assert torch.equal(torch.rand(3), expected)
    assert all(torch.equal(a, b) for a, b in zip(args, before, strict=True))


def test_random_graphs_are_not_compared():
    assert has_random_ops(torch.fx.symbolic_trace(lambda x: torch.nn.functional.dropout(x, 0.5)))
    assert not has_random_ops(torch.fx.symbolic_trace(Block()))
