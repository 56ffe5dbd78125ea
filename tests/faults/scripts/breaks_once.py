"""Compiles f twice (two sizes: a recompile) with a graph break: a trace of ~250 KB."""

import torch


def f(x):
    x = x + 1
    torch._dynamo.graph_break()
    return x * 2


g = torch.compile(f, backend="eager")
g(torch.ones(3))
g(torch.ones(4))
