"""
Issue: https://github.com/pytorch/pytorch/issues/90507
Title: Functionalization on inplace_views should properly reflect autograd metadata
Original report: a compiled function computes `out = x * 2`, then `out.unsqueeze_(0)` and returns
`out`; the caller's in-place `.mul_(2)` on the returned tensor raises "Output 0 of
CompiledFunction is a view and is being modified inplace" (the functionalized graph returns a
view), while eager and inductor on this CPU build run it. The failure happens after the graph
returned, in the caller's code. BACKEND env var selects the backend (default aot_eager).
"""

import os

import torch

backend = os.environ.get("BACKEND", "aot_eager")


def f(x):
    out = x * 2
    out.unsqueeze_(0)
    return out


x = torch.ones(2, requires_grad=True)
y = torch.compile(f, backend=backend)(x)
y.mul_(2)
y.sum().backward()
print("OK", x.grad)
