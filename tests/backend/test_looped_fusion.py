"""Looped reductions fuse as much as persistent ones: rows of symbolic length (`dynamic=True`) and
static rows longer than FXLENS_PERSISTENT_RMAX get the kernel counts of short static rows.

Nodes share a loop over the row until one needs a reduction that loop computes; a pointwise value an
earlier loop computed is recomputed in the later loop (the fusion log and the kernel record say so).
"""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from fxlens.backend import compile_fx


class TinyMLP(nn.Module):
    """The demo's model (toolkit/examples/demo_model.py) without its graph break."""

    def __init__(self, d: int = 16):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.up = nn.Linear(d, 2 * d)
        self.down = nn.Linear(2 * d, d)

    def forward(self, x):
        out = x + self.down(F.gelu(self.up(self.norm(x))))
        return out, out.abs().mean()


def _reused_sum(x):
    y = F.gelu(x) * 3 + x.sin()  # realized: two users, one of them after the row sum
    return y / y.sum(-1, keepdim=True)


def _gelu_mm(x, w, b):
    return F.gelu(x @ w + b)


class GroupNormSiLU(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.GroupNorm(4, 16)

    def forward(self, x):
        return F.silu(self.norm(x))


CASES = {  # name -> (fn, inputs at batch n, training)
    "demo_mlp": (TinyMLP, lambda n: (torch.randn(n, 16),), True),
    "gelu_mm": (lambda: _gelu_mm, lambda n: (torch.randn(n, 12), torch.randn(12, 8), torch.randn(8)), True),
    "layer_norm": (lambda: nn.LayerNorm(24), lambda n: (torch.randn(n, 24),), True),
    "softmax": (lambda: lambda x: torch.softmax(x * 2, -1), lambda n: (torch.randn(n, 24),), True),
    "reused_sum": (lambda: _reused_sum, lambda n: (torch.randn(n, 24),), False),
    # the target's one-hot is a scatter into rows of symbolic length: unrolled, fused
    "smoothed_ce": (
        lambda: lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1),
        lambda n: (torch.randn(n, 24), torch.randint(0, 24, (n,))),
        True,
    ),
    # dynamic=True: as_strided views of symbolic sizes and the spatial size as a tensor, all lowered
    "group_norm_silu": (GroupNormSiLU, lambda n: (torch.randn(n, 16, 4, 4),), True),
}


def _run(fn, args, train: bool):
    args = [a.detach().clone().requires_grad_(train and a.is_floating_point()) for a in args]
    outs = fn(*args)
    outs = outs if isinstance(outs, tuple) else (outs,)
    if train:
        sum(o.float().square().sum() for o in outs).backward()
    return outs, [a.grad for a in args if a.grad is not None]


def _kernels(name, monkeypatch, dynamic: bool, rmax: str, batches=(6,)):
    """Kernel counts per graph after running the case at each batch size, checked against eager."""
    make_fn, make, train = CASES[name]
    monkeypatch.setenv("FXLENS_PERSISTENT_RMAX", rmax)
    torch._dynamo.reset()
    compile_fx.COMPILED.clear()
    torch.manual_seed(0)
    fn = make_fn()
    ref = copy.deepcopy(fn) if isinstance(fn, nn.Module) else fn
    cfn = torch.compile(fn, backend="fxlens", dynamic=dynamic)
    for n in batches:
        args = make(n)
        (o1, g1), (o2, g2) = _run(cfn, args, train), _run(ref, args, train)
        torch.testing.assert_close(o1, o2, atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(g1, g2, atol=1e-5, rtol=1e-3)
        if isinstance(fn, nn.Module):
            for p, q in zip(fn.parameters(), ref.parameters(), strict=True):
                torch.testing.assert_close(p.grad, q.grad, atol=1e-5, rtol=1e-3)
                p.grad = q.grad = None
    return {c.kind: len(c.kernels) for c in compile_fx.COMPILED}, list(compile_fx.COMPILED)


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow) if n == "demo_mlp" else n for n in CASES]
)  # the demo's dynamic compile (with its matmuls) takes ~10 s here; gelu_mm has the same gap
def test_dynamic_rows_fuse_like_static(guards, monkeypatch, name):
    static, _ = _kernels(name, monkeypatch, False, "1024")
    dynamic, calls = _kernels(name, monkeypatch, True, "1024", batches=(6, 4))
    assert dynamic == static
    assert all(c.dynamic for c in calls) and len(calls) == len(static)  # one compile per graph


@pytest.mark.parametrize("name", list(CASES))
def test_rows_past_the_persistent_limit_fuse_like_short_ones(guards, monkeypatch, name):
    short, calls = _kernels(name, monkeypatch, False, "1024")
    assert not any("for roff in range" in k["source"] for c in calls for k in c.kernels)
    looped, calls = _kernels(name, monkeypatch, False, "4")  # rows of 6..32 loop over 4-wide blocks
    assert looped == short
    assert any("for roff in range" in k["source"] for c in calls for k in c.kernels)


def test_recomputed_value_is_logged_and_its_rereads_counted(guards, monkeypatch):
    _, (call,) = _kernels("reused_sum", monkeypatch, True, "1024", batches=(6, 5))
    (k,) = call.kernels
    (buf,) = k["recomputed"]  # y: computed in the loop of the row sum, again in the loop that divides
    assert k["source"].count("for roff in range") == 2
    done = [d for d in call.decisions if d["fused"] and "recomputes" in d["reason"]]
    assert len(done) == 1 and f"recomputes {buf} in a later loop" in done[0]["reason"]
    # bytes_read counts x once (inductor's convention); the second loop reads it again: 6 x 24 fp32
    assert k["bytes_read"] == 6 * 24 * 4 and k["bytes_reread"] == 6 * 24 * 4


def test_nodes_share_one_loop_until_one_needs_its_result(guards, monkeypatch):
    """gelu_mm's bias grad: the pointwise grad and the column sum run in one loop over the rows."""
    _, calls = _kernels("gelu_mm", monkeypatch, True, "1024")
    (k,) = calls[1].kernels
    assert k["source"].count("for roff in range") == 1 and k["bytes_reread"] == 0 and k["recomputed"] == []


def test_group_norm_backward_fuses_across_the_rows_view(guards, monkeypatch):
    """SiLU's backward, over (N, C, H, W), joins the per-channel sums over (N*C, H*W) rows: same
    elements, another shape (ir: row_index). Backward: 4 kernels, as inductor's."""
    counts, _ = _kernels("group_norm_silu", monkeypatch, False, "1024")
    assert counts == {"forward": 3, "backward": 4}
