"""
Issue: https://github.com/pytorch/pytorch/issues/198183
Title: [inductor][cpu] Vectorized float32 `torch.erf` loses all relative accuracy near 0
       under `torch.compile` (returns 0 for |x| <= 1e-7, 1.7e-2 relative error at 1e-5);
       vector `atanh` returns 0 for |x| below float epsilon
Original report: under torch.compile on CPU, float32 torch.erf of a tensor with >= 8
elements returns 0.0 for x=1e-7 and 1.1086e-5 for x=1e-5, while eager returns 1.128e-7
and 1.1284e-5. The vector backend emits Vectorized<float>::erf() (Abramowitz-Stegun
approximation with absolute, not relative, error bound). Silent wrong numbers.
Adapted: CPU, 64-element tensor, compare compiled vs eager with assert_close
(rtol=1e-3, atol=0 since the report is about relative error).
BACKEND env var selects the torch.compile backend (default inductor).
"""

import os

import torch

backend = os.environ.get("BACKEND", "inductor")

vals = [1e-8, 1e-7, 2e-7, 5e-7, 1e-6, 1e-5, 1e-4, 1e-3]
x = torch.tensor((vals * 8)[:64], dtype=torch.float32)


def fn(x):
    return torch.erf(x)


torch._dynamo.reset()
eager = fn(x)
compiled = torch.compile(fn, backend=backend)(x)
for i in range(8):
    print(f"erf({vals[i]:.0e}): eager {eager[i].item():.6e} compiled {compiled[i].item():.6e}")
# The report is about *relative* accuracy, so compare with atol=0.
torch.testing.assert_close(compiled, eager, rtol=1e-3, atol=0.0)
print("OK")
