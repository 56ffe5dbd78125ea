"""
Issue: https://github.com/pytorch/pytorch/issues/185497
Title: [pt2] RuntimeError: variable modified by inplace operation during backward in compiled mode
(succeeds in eager)
Original report: a compiled function interpolates a slice of its input, then normalises the input
in place (`x.sub_(mean).div_(std)`) and returns both; backward() raises "one of the variables
needed for gradient computation has been modified by an inplace operation" under inductor only
(CUDA in the report; the same on CPU). eager, aot_eager and aot_eager_decomp_partition pass.
BACKEND env var selects the torch.compile backend (default inductor, as in the report).
"""

import os

import torch
import torch.nn.functional as F

backend = os.environ.get("BACKEND", "inductor")


def f(x, mean, std):
    y = F.interpolate(x[:, :8, :8].unsqueeze(0), size=(4, 4), mode="bilinear", align_corners=False)
    x.sub_(mean).div_(std)
    return y, x


torch.manual_seed(0)
base = torch.randn(1, 3, 16, 16, requires_grad=True)
x = (base * 1.0).squeeze(0)[:, :16, :16]
mean = torch.randn(3, 1, 1, requires_grad=True)
std = torch.randn(3, 1, 1).abs().add(0.5).requires_grad_()
y, z = torch.compile(f, backend=backend)(x, mean, std)
(y.sum() + z.sum()).backward()
print("OK", float(base.grad.abs().sum()))
