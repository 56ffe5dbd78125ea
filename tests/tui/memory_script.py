"""Two compiled functions whose compiled memory differs from eager's for two causes (the planted
cases of tests/doctor/scripts/mem_saved.py and mem_storm.py in one script): a training step whose
compiled partition saves more for backward, and a recompile storm holding a constant per shape."""

import torch
import torch.nn.functional as F


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(256, 256)

    def forward(self, x):
        h = self.proj(x)
        return F.normalize(h * 1.5, dim=-1).sum()


@torch._dynamo.assume_constant_result
def table():
    return torch.randn(256, 4096)  # 4 MiB, kept by each compiled graph


def lookup(x):
    return (x @ table()).sum()


step = torch.compile(Net(), backend="aot_eager")
x = torch.randn(2048, 256)
for _ in range(4):
    step(x).backward()
f = torch.compile(lookup, backend="aot_eager", dynamic=False)
for n in (8, 16, 24):
    for _ in range(3):
        f(torch.randn(n, 256))
