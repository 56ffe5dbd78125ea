"""A script that sets TORCH_TRACE itself (to its first argument) before importing torch, and
prints torch's own graph count: its trace must be written, and fxlens must read this run."""

import os
import sys

os.environ["TORCH_TRACE"] = sys.argv[1]
import torch  # noqa: E402

f = torch.compile(lambda x: x.cos() * 2, backend="eager")
f(torch.ones(3))
from torch._dynamo.utils import counters  # noqa: E402

print("unique_graphs:", counters["stats"]["unique_graphs"])
