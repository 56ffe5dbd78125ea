"""Recompiles on every call (static shapes that always change) until the recompile limit; and
`dynamic=True` on a function whose shapes never change."""

import torch

torch._dynamo.config.recompile_limit = 4


def grow(x):  # line 9
    return x * 2 + 1


def fixed(x):  # line 13
    return x.sin() + 1


g = torch.compile(grow, backend="eager", dynamic=False)  # line 17
f = torch.compile(fixed, backend="eager", dynamic=True)  # line 18
for n in range(2, 10):
    g(torch.ones(n))
    f(torch.ones(4))
