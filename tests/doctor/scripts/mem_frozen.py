"""Inference under inductor's freezing: `self.w * 2` depends only on a parameter, so freezing folds
it into a new constant the compiled code keeps beside the parameter (and prepacks it for the GEMM)."""

import torch
import torch._inductor.config

torch._inductor.config.freezing = True


class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(1024, 1024))

    def forward(self, x):
        return x @ (self.w * 2).t()


model = Scaled().eval()
fast = torch.compile(model)
with torch.no_grad():
    for _ in range(3):
        fast(torch.randn(8, 1024))
ARGS = (torch.randn(8, 1024),)  # the call tests/doctor/memdriver.py measures again
