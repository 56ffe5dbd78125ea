"""A compiled wrapper that captures no graph: its forward breaks inside a `with` block of a
generator context manager, torch cannot resume there and runs the whole frame eagerly (the shape of
`torch.compile(DDP(model))`). The script prints torch's own counters: the ground truth."""

import contextlib

import torch


@contextlib.contextmanager
def tag():
    yield


class Wrapper(torch.nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        with tag():
            print("in wrapper")  # line 22: the break torch cannot resume inside the with block
            return self.m(x)


model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
f = torch.compile(Wrapper(model), backend="eager")
for _ in range(2):
    f(torch.randn(2, 4))
from torch._dynamo.utils import counters  # noqa: E402

print("unique_graphs:", counters["stats"]["unique_graphs"])
