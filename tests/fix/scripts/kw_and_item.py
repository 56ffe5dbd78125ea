"""A model called with keyword inputs at two lengths (a recompile) whose forward also reads a
Python number with `.item()` (a graph break): two findings, two fixes fxlens can try."""

import torch


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(64, 16)
        self.lin = torch.nn.Linear(16, 16)

    def forward(self, input_ids):
        h = self.lin(self.emb(input_ids))
        scale = h.abs().max().item()
        return h / scale


model = torch.compile(Tiny(), backend="eager")
for n in (8, 12):
    out = model(input_ids=torch.arange(n).unsqueeze(0))
print(tuple(out.shape))
