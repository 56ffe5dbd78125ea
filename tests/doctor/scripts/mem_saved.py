"""A training step whose compiled graph saves more for backward than eager does: under AOTAutograd's
min-cut partitioner, `F.normalize` saves the normalized rows and their norms' broadcast apart, where
eager keeps its input and one norm per row."""

import torch
import torch.nn.functional as F


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(256, 256)

    def forward(self, x):
        h = self.proj(x)
        return F.normalize(h * 1.5, dim=-1).sum()


model = Net()
step = torch.compile(model, backend="aot_eager")
x = torch.randn(2048, 256)
for _ in range(4):
    step(x).backward()
ARGS = (x,)  # the call tests/doctor/memdriver.py measures again
