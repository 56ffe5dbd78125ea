"""A 12-layer model compiled whole: Dynamo traces every layer, though all 12 are the same code."""

import torch


class Block(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = torch.nn.LayerNorm(d)
        self.ff = torch.nn.Sequential(torch.nn.Linear(d, 4 * d), torch.nn.GELU(), torch.nn.Linear(4 * d, d))

    def forward(self, x):
        return x + self.ff(self.norm(x))


class Model(torch.nn.Module):
    def __init__(self, d=32, layers=12):
        super().__init__()
        self.blocks = torch.nn.ModuleList(Block(d) for _ in range(layers))

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return x


torch.manual_seed(0)
model = torch.compile(Model(), backend="inductor")
with torch.no_grad():
    for _ in range(3):
        out = model(torch.randn(4, 32))
print(float(out.sum()))
