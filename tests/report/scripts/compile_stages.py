"""Inductor compiles with a graph break (Dynamo restarts the frame's analysis), and a backend that
fails on purpose. Run twice with one TORCHINDUCTOR_CACHE_DIR: the second run hits the FX graph cache."""

import sys

import torch


def f(x):
    y = x.sin() * 2
    print("graph break here")  # Dynamo restarts its analysis and breaks the graph at this call
    return y.cos() + 1


def boom(gm, example_inputs):
    raise RuntimeError("the backend failed on purpose")


BACKEND = sys.argv[1] if len(sys.argv) > 1 else "inductor"
torch.compile(f, backend=BACKEND)(torch.randn(8))
try:
    torch.compile(lambda x: x * 3, backend=boom)(torch.randn(4))
except Exception as e:  # noqa: BLE001
    print("compile failed as planned:", type(e).__name__)
