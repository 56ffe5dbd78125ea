"""A model compiled, then wrapped in DDP (the order torch's docs advise), on gloo.

Run with 2 local processes: `fxlens doctor --nproc 2 ddp_right_order.py`.
"""

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
model = torch.compile(model, backend="aot_eager")  # line 13: compiles the module
compiled = ddp = DDP(model)  # then wraps it
opt = torch.optim.SGD(compiled.parameters(), lr=0.1)
for _ in range(6):
    loss = compiled(torch.randn(8, 16)).square().mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
# drop DDP (and its gradient reducer) and sync before tearing down: a reducer freed at exit can
# deadlock gloo's teardown on a loaded machine (its worker thread needs the GIL the exit holds)
del compiled, ddp, opt
dist.barrier()
dist.destroy_process_group()
