"""Compile hurts: tiny tensors, and a graph break after almost every op."""

import torch


def step(x):  # line 6
    x = x + 1
    torch._dynamo.graph_break()  # line 8
    x = x * 2
    print("", end="")  # line 10: a print breaks the graph too
    x = x - 3
    torch._dynamo.graph_break()  # line 12
    return x.relu()


tiny = torch.compile(step, backend="aot_eager")  # line 16
x = torch.ones(2)
for _ in range(200):
    x = tiny(x) * 0.5
print(float(x.sum()))
