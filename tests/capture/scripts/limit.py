"""A frame that hits the recompile limit and then silently runs eagerly."""

import torch

torch._dynamo.config.recompile_limit = 3
torch._dynamo.config.automatic_dynamic_shapes = False


def step(x, k):  # line 9
    return x * k


g = torch.compile(step, backend="eager")
for k in range(6):
    g(torch.ones(2), k)
