"""After a code change: the print moved down a line, a new data-dependent break, and a last
batch of another size (a recompile). Tests assert these lines."""

import torch


def step(x):
    y = x.sin()
    y = y * 2  # the added line: the print below moved from line 8 to 10
    print("step")  # line 10: the same graph break, moved
    if y.sum() > 0:  # line 11: a new graph break
        y = y + 1
    return y.cos()


torch._dynamo.config.automatic_dynamic_shapes = False
f = torch.compile(step, backend="eager")
for n in (4, 3):
    f(torch.randn(n))
