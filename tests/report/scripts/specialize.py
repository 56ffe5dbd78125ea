"""A dynamic dimension that user code specialises: `x.shape[0] == 8` turns s0 into the constant 8
(torch logs a symbolic_shape_specialization and the guard it added, with the user's stack)."""

import torch


def f(x, y):
    if x.shape[0] == 8:  # line 8: specialises x's dim 0
        return x * 2
    return x + y.sum()


torch.compile(f, backend="eager", dynamic=True)(torch.randn(8), torch.randn(3))
