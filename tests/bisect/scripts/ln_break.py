"""A correct training step with one LayerNorm used twice and a graph break between (issue 12.1).

The second graph's input is the first graph's output; before the fix, the per-graph check compared
that graph's gradient (which includes the first graph's, through autograd history) with a
reference that saw a fresh leaf, and bisect blamed Dynamo. `tanh` is in the second graph only,
so `FXLENS_INJECT=accuracy:aten.tanh` is a real fault there.
"""

import sys

import torch
import torch.nn as nn

torch.manual_seed(0)


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(16)
        self.fc = nn.Linear(16, 16)

    def forward(self, x):
        y = self.ln(x)
        print("between the two uses")
        return torch.tanh(self.fc(self.ln(y + x)))


m = M()
x = torch.randn(4, 16, requires_grad=True)
backend = sys.argv[1] if len(sys.argv) > 1 else "eager"
out = torch.compile(m, backend=backend)(x)
out.sum().backward()
print("ok")
