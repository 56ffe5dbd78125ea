"""
Issue: https://github.com/pytorch/pytorch/issues/194357
Title: [inductor] `Cauchy.icdf(0)`/`icdf(1)` returns the opposite sign under `torch.compile` on fp16/bf16
Original report: torch.distributions.Cauchy(0,1).icdf(q) for q=0/1 on fp16/bf16: eager gives
-2066/+2066 (correct sign); compiled gives +22877334/-22877334 (wrong sign). Reported on
torch 2.13.0+cu130 and nightly, CPU and CUDA. Silent wrong numbers.
BACKEND env var selects the torch.compile backend (default inductor).
"""

import os

import torch

backend = os.environ.get("BACKEND", "inductor")


def fn(q):
    return torch.distributions.Cauchy(0.0, 1.0).icdf(q)


for dtype in (torch.float16, torch.bfloat16):
    for q in (0.0, 1.0):
        qq = torch.tensor(q, dtype=dtype)
        e = fn(qq)
        torch._dynamo.reset()
        c = torch.compile(fn, backend=backend)(qq)
        print(dtype, "q=", q, "eager=", e.item(), "compiled=", c.item())
        assert torch.sign(e) == torch.sign(c), f"sign mismatch: eager={e.item()} compiled={c.item()}"
print("OK")
