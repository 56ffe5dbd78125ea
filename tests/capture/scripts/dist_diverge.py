"""Two ranks (gloo) whose compiled code diverges: rank 1 breaks the graph where rank 0 does not."""

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
RANK = dist.get_rank()


def step(x):  # line 10
    y = x * 2
    if RANK == 1:
        torch._dynamo.graph_break()  # line 13: only rank 1 breaks here
    return y.sin()


f = torch.compile(step, backend="eager")
out = f(torch.ones(4))
f(torch.ones(4, dtype=torch.float64))  # both ranks recompile for the dtype (one cause, on both ranks)
dist.all_reduce(out)
dist.destroy_process_group()
