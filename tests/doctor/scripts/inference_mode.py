"""Inference under `torch.inference_mode()`: the input is an inference tensor, which has no version
counter (reading `x._version` raises "Inference tensors do not track version counter")."""

import torch

model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
compiled = torch.compile(model, backend="eager")
with torch.inference_mode():
    x = torch.randn(16, 64)
    for _ in range(20):
        compiled(x)
