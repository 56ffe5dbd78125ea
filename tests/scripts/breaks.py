"""Graph breaks at known lines (tests assert these line numbers: keep them stable)."""

import torch


def helper(x):
    torch._dynamo.graph_break()  # line 7: explicit break inside a helper called from forward
    return x * 2


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        y = self.lin(x)
        print("forward")  # line 18: print
        if y.sum() > 0:  # line 19: data-dependent branch
            y = y + 1
        n = int(y.abs().max().item())  # line 21: .item()
        vals = y[0].tolist()  # line 22: .tolist()
        y = helper(y)
        y = y + len(vals) + n
        import math

        y = y * math.exp(float(y.mean()))  # line 27: float() of a tensor (C call)
        return torch.relu(y)


torch.manual_seed(0)
m = torch.compile(Model(), backend="eager")
for _ in range(2):
    m(torch.randn(4, 8))
