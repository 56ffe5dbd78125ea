"""fxlens demo: a model whose compiled version returns wrong numbers in one op.

The fault is injected with fxlens's test switch FXLENS_INJECT=accuracy:aten.erf (like inductor's
`inject_relu_bug_TESTING_ONLY`): the fxlens backend corrupts the kernel that computes erf.
"""

import torch
from torch import nn

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self, d: int = 16):
        super().__init__()
        self.a = nn.Linear(d, d)
        self.b = nn.Linear(d, d)

    def forward(self, x):
        h = torch.erf(self.a(x))  # line 21: the op whose kernel the injected fault corrupts
        return self.b(torch.relu(h) + x)


net = Net()
x = torch.randn(8, 16)
expected = net(x)
got = torch.compile(net, backend="fxlens")(x)
err = (got - expected).abs().max().item()
print(f"max abs error vs eager: {err:.3g}")  # nothing crashes: only the numbers are wrong
