"""A compiled AdamW step with an LR scheduler: the float LR changes every step (recompiles)."""

import torch

torch.manual_seed(0)
model = torch.nn.Linear(8, 8)
opt = torch.optim.AdamW(model.parameters(), lr=0.01)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)


@torch.compile(backend="eager")
def step():
    opt.step()


for _ in range(4):
    model(torch.randn(4, 8)).sum().backward()
    step()
    sched.step()
    opt.zero_grad()
print(float(model.weight.sum()))
