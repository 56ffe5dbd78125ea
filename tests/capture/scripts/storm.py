"""A recompile storm: batch size changes every call, in a function with a graph break."""

import torch

torch._dynamo.config.automatic_dynamic_shapes = False


def forward(x):  # line 8
    y = torch.sin(x) * 2
    torch._dynamo.graph_break()  # line 10
    return torch.cos(y) + 1


f = torch.compile(forward, backend="eager")
for batch in (8, 5, 3):
    f(torch.randn(batch, 4))
