"""Compiled slower than eager by construction: its backend runs every graph twice.

The graph is the same matmul eager runs; the backend calls it twice and returns the second
result, so a compiled call does twice the work (about 2x, plus Dynamo's per-call overhead).
The module exposes `step`, `inputs()` and `compile_step()` for a plain perf_counter comparison.
"""

import torch

# one thread: on a shared 2-core box OpenMP barriers wait on descheduled threads
torch.set_num_threads(1)
W = torch.randn(256, 256)


def twice(gm, example_inputs):
    def run(*args):
        gm(*args)  # the work done twice: slower than eager by construction
        return gm(*args)

    return run


def step(x):  # line 23
    return torch.mm(x, W).relu()


def inputs():
    return (torch.randn(256, 256),)


def compile_step():
    return torch.compile(step, backend=twice)  # line 32


if __name__ == "__main__":
    slow = compile_step()
    (x,) = inputs()
    for _ in range(20):
        y = slow(x)
    print(float(y.sum()))
