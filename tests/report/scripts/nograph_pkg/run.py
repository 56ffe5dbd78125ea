"""Run as `python -m nograph_pkg.run --steps N`: a compiled wrapper that captures no graph (its
forward breaks inside a generator context manager's `with`, where torch cannot resume). It prints
torch's own graph counter: the ground truth for the report's "captured no graph"."""

import argparse
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
            print("in wrapper")
            return self.m(x)


parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, required=True)  # required: a command without it fails
steps = parser.parse_args().steps
model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
f = torch.compile(Wrapper(model), backend="inductor")  # fxlens run --backend eager overrides it
for _ in range(steps):
    f(torch.randn(2, 4))
from torch._dynamo.utils import counters  # noqa: E402

print("unique_graphs:", counters["stats"]["unique_graphs"])
