"""A compiled module used only through its own `generate()` method, as HF's generate() does: the
OptimizedModule forwards `generate` to the original module, whose `self(...)` never reaches the
compiled wrapper, so nothing compiles."""

import torch


class TinyLM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(50, 16)
        self.head = torch.nn.Linear(16, 50)

    def forward(self, ids):
        return self.head(self.emb(ids).mean(1))

    @torch.no_grad()
    def generate(self, ids, steps=4):
        for _ in range(steps):
            nxt = self(ids).argmax(-1, keepdim=True)
            ids = torch.cat([ids, nxt], 1)
        return ids


torch.manual_seed(0)
model = torch.compile(TinyLM(), backend="eager")
print(model.generate(torch.tensor([[1, 2, 3]])).tolist())
