"""A 2-rank DDP job (torchrun, gloo) whose batches change size: a recompile on every rank."""

import os

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
torch.manual_seed(0)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 4))
step = torch.compile(model.module, backend="eager")
for n in (16, 12, 8):
    loss = step(torch.randn(n, 8)).sum()
    loss.backward()
print("rank", os.environ["RANK"], "done")
dist.destroy_process_group()
