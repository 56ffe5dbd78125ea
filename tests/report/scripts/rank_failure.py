"""A backend that fails, naming the rank (RANK, as torchrun sets it) in its error; with ODD=1 it
fails another way. Recorded once per variant and grown to many ranks (tests/ranks)."""

import os

import torch

RANK = os.environ.get("RANK", "0")


def boom(gm, example_inputs):
    if os.environ.get("ODD"):
        raise ValueError(f"rank {RANK}: the backend ran out of memory")
    raise RuntimeError(f"rank {RANK}: the backend failed on purpose")


def forward(x):
    return x.sin() + 1


try:
    torch.compile(forward, backend=boom)(torch.randn(4))
except Exception as e:  # noqa: BLE001
    print("compile failed as planned:", type(e).__name__)
