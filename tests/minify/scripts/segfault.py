"""The mlp model compiled with a backend (defined here) that segfaults on any graph with torch.relu."""

import ctypes
import sys

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from mlp import Model  # noqa: E402


def segfaulting_backend(gm, example_inputs):
    if any(n.target is torch.relu for n in gm.graph.nodes):
        ctypes.string_at(0)  # SIGSEGV, like a crashing native compiler
    return gm


if __name__ == "__main__":
    torch.manual_seed(0)
    with torch.no_grad():
        print(torch.compile(Model(4, 2), backend=segfaulting_backend)(torch.randn(8, 16)))
