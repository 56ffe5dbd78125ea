"""Two rule cases in one run (issue 34). (1) A module's int attribute read through a global (`m`)
changes between calls: torch guards `G['m'].k == 2` with a HINT that integer attributes of an
nn.Module are static. (2) torch.func.grad compiled: Dynamo compiles torch's own wrapper frame,
whose graph traces the user's `loss` (line 28)."""

import torch


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.k = 2

    def forward(self, x):
        for _ in range(self.k):
            x = self.lin(x)
        return x


m = M()


def step(x):
    return m(x) * 2  # line 24


def loss(w, x):
    return (x @ w).sin().sum()  # line 28: the line torch.func.grad traces


f = torch.compile(step, backend="eager")
for k in (2, 3):
    m.k = k
    f(torch.ones(2, 4))
g = torch.compile(torch.func.grad(loss), backend="eager")
g(torch.ones(3), torch.ones(2, 3))
