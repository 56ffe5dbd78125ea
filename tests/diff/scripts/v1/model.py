"""Before a code change: one graph break (print), fixed shapes (tests assert these lines)."""

import torch


def step(x):
    y = x.sin()
    print("step")  # line 8: a graph break
    return y.cos()


torch._dynamo.config.automatic_dynamic_shapes = False
f = torch.compile(step, backend="eager")
for n in (4, 4):
    f(torch.randn(n))
