"""Random ops generated in-kernel (lower/rng.py): statistics, seeding, dropout and its backward.

Numbers never match eager bitwise (Philox in the kernel, seeds from torch's generator), so these
tests assert what must hold instead, with bounds of about 4 standard deviations for 4096 samples:
uniform mean 0.5 +- 0.02 and variance 1/12 +- 0.006, normal mean 0 +- 0.07 and variance 1 +- 0.1,
dropout's zero fraction p +- 0.03; exact where exact: values in [0, 1), reproducible under
torch.manual_seed, fresh numbers on each call, kept values scaled by 1/(1-p), grad = mask*scale*g.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from fxlens.backend import compile_fx

pytestmark = pytest.mark.triton
N = (64, 64)


def _fallbacks(graphs=None) -> dict:
    graphs = compile_fx.COMPILED if graphs is None else graphs
    return {k: v for g in graphs for k, v in g.fallbacks.items()}


def _kernels(graphs) -> int:
    return sum(len(g.kernels) for g in graphs)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_rand_like_is_uniform(compiled, guards, dtype):
    out, graphs = compiled(lambda x: torch.rand_like(x), torch.zeros(N, dtype=dtype))
    assert out.dtype == dtype and out.shape == N
    u = out.double()
    assert 0 <= u.min() and u.max() <= 1  # [0, 1) in fp32; rounding to fp16/bf16 may reach 1.0
    assert abs(u.mean() - 0.5) < 0.02 and abs(u.var() - 1 / 12) < 0.006
    counts = torch.histc(u, bins=8, min=0, max=1)  # 512 expected per bin, std ~21
    assert (counts - 512).abs().max() < 100, counts
    assert _fallbacks(graphs) == {} and _kernels(graphs) == 1
    assert "inductor_seeds" in graphs[0].wrapper_source  # one seed call per graph, from torch's RNG


def test_randn_and_rand_fused_with_arithmetic(compiled, guards):
    x = torch.linspace(-1, 1, N[0] * N[1]).view(N)
    out, graphs = compiled(lambda x: (x * 0 + torch.randn_like(x), torch.rand(N) * 2 + x), x)
    n, u = out[0].double(), (out[1] - x).double() / 2
    assert abs(n.mean()) < 0.07 and abs(n.var() - 1) < 0.1
    assert abs(u.mean() - 0.5) < 0.02 and 0 <= u.min() and u.max() < 1 + 1e-6
    assert _fallbacks(graphs) == {} and _kernels(graphs) == 1  # both random ops in one kernel


def test_seeding_reproducible_and_fresh_per_call(compiled):
    def f(x):
        return torch.rand_like(x), torch.rand_like(x)  # two ops: two seeds

    x = torch.zeros(4, 8)
    torch.manual_seed(123)
    (a1, a2), _ = compiled(f, x)
    fn = torch.compile(f, backend="fxlens")  # same graph, already compiled
    b1, b2 = fn(x)
    torch.manual_seed(123)
    c1, c2 = fn(x)
    assert torch.equal(a1, c1) and torch.equal(a2, c2), "torch.manual_seed makes runs reproducible"
    assert not torch.equal(a1, b1), "consecutive calls draw new numbers"
    assert not torch.equal(a1, a2), "two random ops in one graph differ"
    assert a1.unique().numel() == a1.numel(), "every element has its own offset"


def test_bernoulli(compiled, guards):
    p = torch.tensor([0.0, 1.0, 0.3, 0.9]).repeat_interleave(1024).view(4, 1024)
    out, graphs = compiled(lambda p: torch.bernoulli(p), p)
    assert set(out.unique().tolist()) <= {0.0, 1.0}
    assert out[0].sum() == 0 and out[1].sum() == 1024
    assert abs(out[2].mean() - 0.3) < 0.06 and abs(out[3].mean() - 0.9) < 0.04
    assert _fallbacks(graphs) == {}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("p", [0.2, 0.5])
def test_dropout_forward_backward(compiled, guards, p, dtype):
    g = torch.Generator().manual_seed(0)
    x = (torch.rand(N, generator=g) + 0.5).to(dtype).requires_grad_()  # no zeros: the mask is y != 0
    go = torch.randn(N, generator=g).to(dtype)
    y, _ = compiled(lambda x: F.dropout(x, p, training=True) * 1, x)
    y.backward(go)
    mask = y != 0
    scale = 1 / (1 - p)
    assert abs((~mask).double().mean() - p) < 0.03
    tol = 1e-6 if dtype == torch.float32 else 1e-3
    torch.testing.assert_close(y[mask].float(), x.detach()[mask].float() * scale, atol=tol, rtol=tol)
    # the backward pass uses the forward's mask (AOTAutograd saves it), scaled by 1/(1-p)
    torch.testing.assert_close(x.grad.float(), (mask * go).float() * scale, atol=tol, rtol=tol)
    assert {c.kind for c in compile_fx.COMPILED} == {"forward", "backward"}
    assert _fallbacks() == {}


@pytest.mark.parametrize("p", [0.0, 1.0])
def test_dropout_edge_probabilities(compiled, p):
    x = (torch.rand(8, 16) + 0.5).requires_grad_()
    go = torch.randn(8, 16)
    y, _ = compiled(lambda x: F.dropout(x, p, training=True) + 0, x)
    y.backward(go)
    torch.testing.assert_close(y, x.detach() if p == 0 else torch.zeros_like(y))
    torch.testing.assert_close(x.grad, go if p == 0 else torch.zeros_like(go))
    assert _fallbacks() == {}


def test_dropout_eval_is_identity(compiled):
    m = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5)).eval()
    x = torch.randn(4, 8)
    with torch.no_grad():
        out, _ = compiled(m, x)
        torch.testing.assert_close(out, m(x))


def test_fallback_random_switch_runs_aten(compiled, monkeypatch):
    # FXLENS_FALLBACK_RANDOM=1: ATen's own RNG, so the numbers are eager's under the same seed
    monkeypatch.setenv("FXLENS_FALLBACK_RANDOM", "1")
    x = torch.rand(16, 16) + 0.5
    torch.manual_seed(7)
    out, graphs = compiled(lambda x: (F.dropout(x, 0.3, training=True) * 2, torch.rand_like(x)), x)
    torch.manual_seed(7)
    ref = (F.dropout(x, 0.3, training=True) * 2, torch.rand_like(x))
    assert torch.equal(out[0], ref[0]) and torch.equal(out[1], ref[1])
    assert set(_fallbacks(graphs)) == {"aten.native_dropout.default", "aten.rand_like.default"}


class DropoutMLP(nn.Module):
    def __init__(self, p=0.3):
        super().__init__()
        self.fc1, self.fc2, self.drop = nn.Linear(16, 64), nn.Linear(64, 1), nn.Dropout(p)

    def forward(self, x):
        return self.fc2(self.drop(F.relu(self.fc1(x))))


def test_dropout_mlp_trains(compiled):
    torch.manual_seed(0)
    x = torch.randn(64, 16)
    y = x[:, :4].sum(1, keepdim=True)  # a learnable target
    model = DropoutMLP()
    torch._dynamo.reset()
    compile_fx.COMPILED.clear()
    step_model = torch.compile(model, backend="fxlens")
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for _ in range(15):
        opt.zero_grad()
        loss = F.mse_loss(step_model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert sum(losses[-5:]) / 5 < 0.5 * sum(losses[:5]) / 5, losses
    assert {g.kind for g in compile_fx.COMPILED} == {"forward", "backward"}
    matmuls = {"aten.addmm.default", "aten.mm.default"}  # matmuls stay ATen calls, by design
    assert set(_fallbacks()) <= matmuls, _fallbacks()
    model.eval()
    with torch.no_grad():  # the trained model, eval mode: dropout off, matches eager
        torch.testing.assert_close(torch.compile(model, backend="fxlens")(x), model(x), atol=1e-5, rtol=1e-5)


_SAME_AS_TL_RAND = """
@triton.jit
def k(p_seed, p_out, n: tl.constexpr):
    x = tl.arange(0, n)
    s = tl.load(p_seed)
    tl.store(p_out + x, _fx_rand(s, x))
    tl.store(p_out + n + x, tl.rand(s, x))
    tl.store(p_out + 2 * n + x, _fx_randn(s, x))
    tl.store(p_out + 3 * n + x, tl.randn(s, x))


out = torch.empty(4 * 1024)
k[(1,)](torch.tensor([1234567890123]), out, 1024)
a, b, c, d = out.view(4, 1024)
assert torch.equal(a, b) and torch.equal(c, d), "differs from tl.rand / tl.randn"
print("same")
"""


def test_inlined_philox_is_triton_rand(tmp_path):
    # Triton's stdlib tl.rand cannot be called from kernels loaded with the interpret knob, so the
    # backend inlines the same Philox; with TRITON_INTERPRET=1 set before import both run: compare
    import os
    import subprocess
    import sys

    from fxlens.backend.lower.rng import PHILOX_SOURCE

    script = tmp_path / "philox_check.py"  # triton.jit reads its functions' source from the file
    script.write_text(
        "import torch\nimport triton\nimport triton.language as tl\n" + PHILOX_SOURCE + _SAME_AS_TL_RAND
    )
    env = dict(os.environ, TRITON_INTERPRET="1")
    r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "same" in r.stdout, r.stderr[-2000:]


def test_channel_dropout_and_alpha_dropout(compiled, guards):
    x = torch.rand(8, 16, 3, 3) + 0.5
    out, graphs = compiled(lambda x: F.dropout2d(x, 0.5, training=True), x)
    kept = (out != 0).flatten(2)
    assert (kept.all(-1) | (~kept).all(-1)).all(), "dropout2d zeroes whole channels"
    assert 0.3 < kept.all(-1).double().mean() < 0.7
    torch.testing.assert_close(out[out != 0], (x * 2)[out != 0])
    assert _fallbacks(graphs) == {}
    out, graphs = compiled(lambda x: F.alpha_dropout(x, 0.2, training=True), torch.zeros(64, 64))
    assert out.unique().numel() == 2 and abs(out.mean()) < 0.05  # alpha dropout keeps mean 0
    assert _fallbacks(graphs) == {}
