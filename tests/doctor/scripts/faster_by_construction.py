"""Compiled faster than eager by construction: eager does a second matmul that the graph never has.

`torch.compiler.is_compiling()` is True while Dynamo traces, so the extra matmul is not in the
graph: compiled runs one matmul a call, eager two (about 2x, less Dynamo's per-call overhead).
The module exposes `step`, `inputs()` and `compile_step()` for a plain perf_counter comparison.
"""

import torch

# one thread: on a shared 2-core box OpenMP barriers wait on descheduled threads
torch.set_num_threads(1)
W = torch.randn(256, 256)


def step(x):  # line 15
    if not torch.compiler.is_compiling():
        torch.mm(x, W)  # eager only: the same work again, its result dropped
    return torch.mm(x, W).relu()


def inputs():
    return (torch.randn(256, 256),)


def compile_step():
    return torch.compile(step, backend="eager")  # line 26


if __name__ == "__main__":
    fast = compile_step()
    (x,) = inputs()
    for _ in range(20):
        y = fast(x)
    print(float(y.sum()))
