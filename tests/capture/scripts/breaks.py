"""Graph breaks at known lines (tests assert these line numbers: keep them stable)."""

import zlib

import torch


def helper(x):
    torch._dynamo.graph_break()  # line 9: explicit break inside a helper called from forward
    return x * 2


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        y = self.lin(x)
        print("forward")  # line 20: print
        if y.sum() > 0:  # line 21: data-dependent branch
            y = y + 1
        n = int(y.abs().max().item() > 0)  # line 23: .item()
        vals = y[0].tolist()  # line 24: .tolist()
        y = helper(y)
        y = y + len(vals) + n
        y = y + zlib.crc32(b"fxlens") % 7  # line 27: a C extension function Dynamo can't trace
        return torch.relu(y)


torch.manual_seed(0)
m = torch.compile(Model(), backend="eager")
for _ in range(2):
    m(torch.randn(4, 8))
