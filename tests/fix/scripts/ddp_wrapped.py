"""torch.compile of a DDP wrapper (one process, gloo): torch's docs compile the module inside it."""

import os
import tempfile

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", init_method=f"file://{tempfile.mktemp()}", rank=0, world_size=1)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
ddp = torch.compile(DDP(model), backend="aot_eager")
opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
for _ in range(3):
    loss = ddp(torch.randn(4, 8)).sum()
    loss.backward()
    opt.step()
    opt.zero_grad()
print(float(loss), os.getpid() > 0)
dist.destroy_process_group()
