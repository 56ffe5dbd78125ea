"""torch.compile on a generator function: Dynamo refuses it ("Attempt to trace generator") and runs
it eagerly; the function is called, so "never called" would be wrong."""

import torch


@torch.compile(backend="eager")
def steps(x):
    for i in range(3):
        yield x * i


print([float(t.sum()) for t in steps(torch.ones(2))])
