"""Model-level tests: forward and backward through fxlens on the Triton interpreter, against eager."""

from __future__ import annotations

import copy

import pytest
import torch
from models import MLP, Block, ConvNet, RMSNorm

pytestmark = pytest.mark.triton


def _train_step(model, x, compiled_fn):
    ref_model = copy.deepcopy(model)
    cm = compiled_fn(model)
    xe, xc = x.clone().requires_grad_(), x.clone().requires_grad_()
    ref, out = ref_model(xe), cm(xc)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-4)
    ref.square().sum().backward()
    out.square().sum().backward()
    torch.testing.assert_close(xc.grad, xe.grad, atol=1e-5, rtol=1e-4)
    for (name, p), q in zip(model.named_parameters(), ref_model.parameters(), strict=True):
        torch.testing.assert_close(p.grad, q.grad, atol=1e-5, rtol=1e-4, msg=name)
    for b, rb in zip(model.buffers(), ref_model.buffers(), strict=True):  # batchnorm running stats
        torch.testing.assert_close(b, rb)


def _compile(m):
    torch._dynamo.reset()
    from fxlens.backend import compile_fx

    compile_fx.COMPILED.clear()
    return torch.compile(m, backend="fxlens")


def _kernels():
    from fxlens.backend import compile_fx

    return [k for g in compile_fx.COMPILED for k in g.kernels]


@pytest.mark.parametrize(
    "make,shape",
    [(MLP, (4, 32)), (RMSNorm, (4, 64)), (ConvNet, (2, 3, 8, 8)), (Block, (2, 8, 32))],
    ids=["mlp_gelu", "rmsnorm", "convnet_bn_pool", "gpt2_block"],
)
def test_forward_backward(make, shape):
    torch.manual_seed(0)
    _train_step(make(), torch.randn(shape), _compile)
    graphs = {k["graph"] for k in _kernels()}
    assert graphs == {"forward", "backward"}


def test_inference_no_grad_and_eval_batchnorm():
    torch.manual_seed(0)
    m = ConvNet().eval()
    x = torch.randn(2, 3, 8, 8)
    with torch.no_grad():
        out = _compile(copy.deepcopy(m))(x)
        torch.testing.assert_close(out, m(x), atol=1e-5, rtol=1e-4)
    assert {k["graph"] for k in _kernels()} == {"inference"}


def test_adamw_step():
    torch.manual_seed(0)
    m = MLP()
    m2 = copy.deepcopy(m)
    for p, q in zip(m.parameters(), m2.parameters(), strict=True):
        p.grad = torch.randn_like(p)
        q.grad = p.grad.clone()
    o1 = torch.optim.AdamW(m.parameters(), lr=0.01)
    o2 = torch.optim.AdamW(m2.parameters(), lr=0.01)
    step = _compile(o2.step)
    for _ in range(2):
        o1.step()
        step()
    for p, q in zip(m.parameters(), m2.parameters(), strict=True):
        torch.testing.assert_close(q, p, atol=1e-6, rtol=1e-5)
    for s1, s2 in zip(o1.state.values(), o2.state.values(), strict=True):
        torch.testing.assert_close(s2["exp_avg_sq"], s1["exp_avg_sq"])
    assert any("copy_" in " ".join(k["ops"]) for k in _kernels()), "parameter updates are kernel stores"


def test_log_softmax_one_kernel_and_cross_entropy_two():
    torch.manual_seed(0)
    x, t = torch.randn(6, 10, requires_grad=True), torch.tensor([1, 0, 9, 3, 3, 2])
    out = _compile(lambda x: x.log_softmax(-1))(x)
    torch.testing.assert_close(out, x.log_softmax(-1))
    assert len([k for k in _kernels() if k["graph"] == "forward"]) == 1
    out = _compile(torch.nn.functional.cross_entropy)(x, t)
    torch.testing.assert_close(out, torch.nn.functional.cross_entropy(x, t))
    # rows (log-sum-exp per row) and the batch mean are reductions over different domains
    fwd = [k for k in _kernels() if k["graph"] == "forward"]
    assert len(fwd) == 2, [k["name"] for k in fwd]


def test_dynamic_shapes_compile_once():
    from fxlens.backend import compile_fx

    compile_fx.COMPILED.clear()
    f = _compile_dynamic(lambda x: torch.softmax(x * 2, -1).sum(0))
    for n in (3, 5, 9):
        x = torch.randn(n, 7)
        torch.testing.assert_close(f(x), torch.softmax(x * 2, -1).sum(0))
    assert [c.dynamic for c in compile_fx.COMPILED] == [True]  # sizes are kernel arguments


def _compile_dynamic(fn):
    torch._dynamo.reset()
    return torch.compile(fn, backend="fxlens", dynamic=True)


def test_static_recompiles_for_new_shapes():
    f = _compile(lambda x: (x.exp() + 1).mean(-1))
    for n in (4, 6, 9):
        x = torch.randn(n, 3)
        torch.testing.assert_close(f(x), (x.exp() + 1).mean(-1))


def test_aliased_and_view_outputs():
    def f(x):
        y = x * 2
        return y.t(), y[1:], x.view(-1)

    x = torch.randn(4, 6)
    outs = _compile(f)(x)
    for o, r in zip(outs, f(x), strict=True):
        assert o.shape == r.shape and o.stride() == r.stride()
        torch.testing.assert_close(o, r)


def test_tiny_hf_transformer():
    transformers = pytest.importorskip("transformers", reason="transformers is not installed")
    cfg = transformers.GPT2Config(n_layer=1, n_head=2, n_embd=32, vocab_size=64, n_positions=16)
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(cfg).eval()
    ids = torch.randint(0, 64, (2, 8))
    ref_model = copy.deepcopy(model)
    out = _compile(model)(ids, labels=ids)
    ref = ref_model(ids, labels=ids)
    torch.testing.assert_close(out.logits, ref.logits, atol=1e-4, rtol=1e-4)
    out.loss.backward()
    ref.loss.backward()
    for p, q in zip(model.parameters(), ref_model.parameters(), strict=True):
        torch.testing.assert_close(p.grad, q.grad, atol=1e-4, rtol=1e-3)
    assert len(_kernels()) > 5
