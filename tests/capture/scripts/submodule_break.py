"""A graph break inside a submodule that Dynamo inlines: one break, several graphs (the model's
graph up to the block, the block's own graphs before and after its break, the model resumed)."""

import torch


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(8, 8)
        self.b = torch.nn.Linear(8, 8)

    def forward(self, x):
        h = self.a(x).relu()
        torch._dynamo.graph_break()  # e.g. a logging call inside a library block
        return self.b(h)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = torch.nn.Linear(8, 8)
        self.block = Block()
        self.out = torch.nn.Linear(8, 2)

    def forward(self, x):
        h = self.inp(x).tanh()
        h = self.block(h)
        return self.out(h).sum()


model = Model()
compiled = torch.compile(model, backend="eager")
for _ in range(2):
    compiled(torch.randn(4, 8))
