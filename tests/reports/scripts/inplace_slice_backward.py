"""
Issue: https://github.com/pytorch/pytorch/issues/185497
Title: [pt2] RuntimeError: variable modified by inplace operation during backward in compiled mode
(succeeds in eager)
The graph `fxlens minify --backend inductor` reduces that report to (inplace_norm_backward.py):
the `interpolate` gone, a slice of the input is returned while the input is normalised in place.
Unlike the report's graph, this one fails under every AOTAutograd backend of torch 2.13 (aot_eager
included) with the same RuntimeError, and passes in eager. INTERPOLATE=1 puts the report's
`interpolate` back (then aot_eager passes, as in the report).
BACKEND env var selects the torch.compile backend (default aot_eager).
"""

import os

import torch
import torch.nn.functional as F

backend = os.environ.get("BACKEND", "aot_eager")
interpolate = os.environ.get("INTERPOLATE") == "1"


def f(x, mean, std):
    y = x[:, :8, :8]
    if interpolate:
        y = F.interpolate(y.unsqueeze(0), size=(4, 4), mode="bilinear", align_corners=False)
    x.sub_(mean).div_(std)
    return y


torch.manual_seed(0)
base = torch.randn(3, 16, 16, requires_grad=True)
x = base * 1.0  # a non-leaf, as in the report
mean = torch.randn(3, 1, 1, requires_grad=True)
std = torch.randn(3, 1, 1).abs().add(0.5).requires_grad_()
torch.compile(f, backend=backend)(x, mean, std).sum().backward()
print("OK", float(base.grad.abs().sum()))
