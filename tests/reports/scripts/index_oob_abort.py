"""
Issue: https://github.com/pytorch/pytorch/issues/195402
Title: [inductor] Out-of-bounds index aborts the process (SIGABRT) instead of raising, when the
       generated kernel is parallelised
Original report: (x - 0.5)[idx] with idx out of bounds on dim 0: eager raises a catchable
IndexError; inductor's C++ kernel throws std::runtime_error inside an OpenMP region, and the
process ends with "terminate called ... index out of bounds" and SIGABRT, no traceback.
Adapted: as reported (CPU); the script catches eager's IndexError and expects the compiled call
to raise one too. BACKEND env var selects the torch.compile backend (default inductor).
"""

import os

import torch

backend = os.environ.get("BACKEND", "inductor")


def f(x, idx):
    return (x - 0.5)[idx]


x = torch.randn(1, 8, 66, 66)  # dim 0 has size 1
idx = torch.tensor([[1]])  # index 1: out of bounds on dim 0
try:
    f(x, idx)
    raise SystemExit("eager accepted the index: nothing to report")
except IndexError as e:
    print("eager raises:", e, flush=True)
try:
    torch.compile(f, backend=backend)(x, idx)
except IndexError as e:
    print("compiled raises:", e)
else:
    raise AssertionError("eager raises IndexError, compiled returns a value")
print("OK")
