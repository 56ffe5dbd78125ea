"""
Issue: https://github.com/pytorch/pytorch/issues/159239
Title: [Inductor] Inconsistent results between eager execution and torch.compile
Original report: rotary position embedding (q * cos + rotate_half(q) * sin) in bf16 differs
between eager and inductor beyond assert_close's tolerance. The maintainers' answer: compiled is
the more accurate one (it keeps the products in fp32 and rounds once; eager rounds each product to
bf16): max difference from fp32 0.0566 compiled vs 0.0684 eager.
Adapted: CPU, small shapes; prints each side's largest error against an fp64 run, then the
report's check, assert_close(compiled, eager). BACKEND env var selects the backend (default
inductor).
"""

import os

import torch

backend = os.environ.get("BACKEND", "inductor")


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


torch.manual_seed(0)
dtype = torch.bfloat16
q, k = torch.randn(1, 4, 64, 32, dtype=dtype), torch.randn(1, 4, 64, 32, dtype=dtype)
pos = torch.arange(64, dtype=torch.float32)[None, :, None] * torch.rand(16)[None, None, :]
emb = torch.cat((pos, pos), dim=-1)
cos, sin = emb.cos().to(dtype), emb.sin().to(dtype)
eager = apply_rotary_pos_emb(q, k, cos, sin)
compiled = torch.compile(apply_rotary_pos_emb, backend=backend)(q, k, cos, sin)
exact = apply_rotary_pos_emb(q.double(), k.double(), cos.double(), sin.double())
for name, e, c, r in zip("qk", eager, compiled, exact):
    err_e, err_c = (e.double() - r).abs().max().item(), (c.double() - r).abs().max().item()
    print(f"{name}: max error vs fp64: eager {err_e:.4g} compiled {err_c:.4g}")
torch.testing.assert_close(compiled, eager)
print("OK")
