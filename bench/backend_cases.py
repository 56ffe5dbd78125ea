"""The fusion cases of issue 11 (item 5), shared by bench/backend.py (CPU, kernel and byte counts
against inductor) and bench/gpu.py (CUDA timings): long rows that reduce in a loop, norms with
activations, masked attention softmax, gated MLPs, rotary embeddings, a smoothed loss, Adam.

Each case is `(name, factory, make, batches)`: `factory()` returns a fresh module or function,
`make(batch, big)` its inputs (`big`: the GPU's sizes, else the CPU interpreter's), and `batches`
the two batch sizes of the `dynamic=True` run.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class GroupNormSiLU(nn.Module):
    def __init__(self, c: int = 64, groups: int = 8):
        super().__init__()
        self.norm = nn.GroupNorm(groups, c)

    def forward(self, x):
        return F.silu(self.norm(x))


class CausalSoftmax(nn.Module):
    """Attention probabilities: scaled scores, a causal mask (a boolean buffer), softmax."""

    def __init__(self, t: int):
        super().__init__()
        self.register_buffer("mask", torch.ones(t, t, dtype=torch.bool).tril())

    def forward(self, scores):
        t = scores.shape[-1]
        return (scores * 0.125).masked_fill(~self.mask[:t, :t], float("-inf")).softmax(-1)


class SwiGLU(nn.Module):
    def __init__(self, d: int = 64, h: int = 128):
        super().__init__()
        self.gate, self.up, self.down = (
            nn.Linear(d, h, bias=False),
            nn.Linear(d, h, bias=False),
            nn.Linear(h, d),
        )

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


class RMSNormRotary(nn.Module):
    """Llama's q path: RMSNorm over the head dim, then rotary embeddings (rotate_half form)."""

    def __init__(self, t: int, d: int):
        super().__init__()
        self.w = nn.Parameter(torch.randn(d))
        inv = 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d))
        ang = torch.outer(torch.arange(t).float(), inv)
        emb = torch.cat([ang, ang], -1)[:, None, :]  # (t, 1, d): broadcast over heads
        self.register_buffer("cos", emb.cos())
        self.register_buffer("sin", emb.sin())

    def forward(self, x):  # x: (batch, t, heads, d)
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.w
        x1, x2 = x.chunk(2, -1)
        return x * self.cos + torch.cat([-x2, x1], -1) * self.sin


def smoothed_nll(logits, target):
    return F.cross_entropy(logits, target, label_smoothing=0.1)


def cases():
    """(name, factory, make(batch, big), (batch, batch2)) for each case but Adam."""
    yield (
        "LayerNorm, 16k-column rows",
        lambda: nn.LayerNorm(16384),
        lambda b, big: (torch.randn(b * (256 if big else 1), 16384),),
        (4, 6),
    )
    yield (
        "softmax, 16k-column rows",
        lambda: lambda x: torch.softmax(x, -1),
        lambda b, big: (torch.randn(b * (256 if big else 1), 16384),),
        (4, 6),
    )
    yield (
        "GroupNorm+SiLU",
        lambda: GroupNormSiLU(64, 8),
        lambda b, big: (torch.randn(b * (8 if big else 1), 64, 32 if big else 8, 32 if big else 8),),
        (4, 6),
    )
    t = 64

    def scores(b, big):
        return (
            torch.randn(
                b * (8 if big else 1), 4 if not big else 16, t * (8 if big else 1), t * (8 if big else 1)
            ),
        )

    yield "masked causal softmax", lambda: CausalSoftmax(t * 8), scores, (2, 3)
    yield (
        "SwiGLU MLP",
        lambda: SwiGLU(64, 128),
        lambda b, big: (torch.randn(b * (64 if big else 1), 16, 64),),
        (4, 6),
    )
    yield (
        "RMSNorm+rotary",
        lambda: RMSNormRotary(16, 32),
        lambda b, big: (torch.randn(b * (64 if big else 1), 16, 4, 32),),
        (3, 5),  # not 4, the number of heads: Dynamo would give both sizes one symbol (duck sizing)
    )
    yield (
        "log_softmax+NLL, label smoothing",
        lambda: smoothed_nll,
        lambda b, big: (
            torch.randn(b * (64 if big else 16), 1000),
            torch.randint(0, 1000, (b * (64 if big else 16),)),
        ),
        (4, 6),
    )


def adam(big: bool = False, device: str = "cpu") -> torch.optim.Optimizer:
    """Adam (foreach=False: one update per parameter) over an MLP's parameters with random grads."""
    torch.manual_seed(0)
    d = 1024 if big else 64
    m = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d)).to(device)
    for p in m.parameters():
        p.grad = torch.randn_like(p)
    return torch.optim.Adam(m.parameters(), lr=1e-3, foreach=False)
