"""A model whose forward reads a Python number with `.item()`: a graph break on every call."""

import torch


class Scale(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(16, 16)

    def forward(self, x):
        h = self.lin(x)
        peak = h.abs().max().item()
        return h / peak


model = torch.compile(Scale(), backend="eager")
for _ in range(3):
    out = model(torch.randn(4, 16))
print(out.shape)
