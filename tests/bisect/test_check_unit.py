"""The accuracy check in-process: outputs and gradients against fp64, the user's state untouched."""

import pytest

torch = pytest.importorskip("torch")

from fxlens.bisect.fp64_compare import compare_result, has_random_ops, references  # noqa: E402


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


def test_a_traceback_through_compiled_code_is_not_the_scripts_own_check():
    from fxlens.bisect.runs import _raised_outside_compiled_code

    site = "/venv/lib/python3.11/site-packages"
    own_check = f"""noise before
Traceback (most recent call last):
  File "/home/u/repro.py", line 30, in <module>
    torch.testing.assert_close(compiled, eager)
  File "{site}/torch/testing/_comparison.py", line 1600, in assert_close
    raise error_metas[0].to_error(msg)
AssertionError: Tensor-likes are not close!
"""
    backward = f"""Traceback (most recent call last):
  File "/home/u/train.py", line 12, in <module>
    loss.backward()
  File "{site}/torch/autograd/__init__.py", line 353, in backward
    _engine_run_backward(
  File "{site}/torch/_functorch/_aot_autograd/runtime_wrappers.py", line 2100, in backward
    out = call_func_at_runtime_with_args(
RuntimeError: shape mismatch
"""
    generated = """Traceback (most recent call last):
  File "/home/u/m.py", line 3, in <module>
    out = model(x)
  File "/tmp/torchinductor_u/ab/cabcdef.py", line 40, in call
    buf0 = reinterpret_tensor(arg0_1, (3, 8), (1, 3), 0).view(24)
RuntimeError: view size is not compatible
"""
    assert _raised_outside_compiled_code(own_check) is True
    assert _raised_outside_compiled_code(backward) is False
    assert _raised_outside_compiled_code(generated) is False
    assert _raised_outside_compiled_code("Killed\n") is False  # no traceback: not known
    # only the last traceback counts: an earlier, handled one through Dynamo does not
    assert _raised_outside_compiled_code(backward + "\nthen\n" + own_check) is True


def test_gradients_are_taken_as_the_scripts_backward_takes_them_outside_autocast():
    """Issue 34: the check differentiates inside the compiled call, under the caller's autocast; the
    script's backward runs after its `with torch.autocast(...)` block. Ground truth: what a hook
    sees in a plain script's backward outside the block."""
    import torch

    from fxlens.bisect import fp64_compare as check

    def f(t, w):
        return (torch.mm(t, w),)

    w = torch.randn(4, 4, requires_grad=True)
    x = torch.randn(2, 4, requires_grad=True)
    script_saw, check_saw = [], []
    with torch.autocast("cpu", dtype=torch.bfloat16):
        (out,) = f(x, w)
    out.register_hook(lambda g: script_saw.append(torch.is_autocast_enabled("cpu")))
    out.sum().backward()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        refs = check.references(f, [x, w])
        (probe,) = f(*refs.probe_args)
        probe.register_hook(lambda g: check_saw.append(torch.is_autocast_enabled("cpu")))
        divs = check.compare_result(refs.probe_args, (probe,), refs, check_grads=True)
        assert torch.is_autocast_enabled("cpu")  # the caller's block is untouched
    assert script_saw == check_saw == [False]
    assert {d.what for d in divs} == {"output 0", "grad of input 0", "grad of input 1"}
