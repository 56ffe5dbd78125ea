"""torch.compile(DDP(model)) on 2 gloo ranks (CPU), rank 1 seeing a short last batch."""

import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def worker(rank, world, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    ddp = torch.compile(DDP(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))), backend="eager")
    for bs in (4, 6 if rank == 1 else 4):
        ddp(torch.randn(bs, 8)).sum().backward()
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(2, int(sys.argv[1])), nprocs=2)
