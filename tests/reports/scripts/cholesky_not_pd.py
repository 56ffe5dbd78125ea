"""
A correct script of the "eager raises" shape, for the verdicts of the reports beside it: the
compiled call raises exactly what eager raises at every stage of both ladders, so no stage fails.
Shape of pytorch/pytorch#193757 (catch eager's error, assert compiled raises the same), with an op
every backend runs as ATen: linalg.cholesky of a matrix that is not positive-definite raises
torch.linalg.LinAlgError in eager and compiled alike.
BACKEND env var selects the torch.compile backend (default inductor).
"""

import os

import torch

backend = os.environ.get("BACKEND", "inductor")


def f(a):
    return torch.linalg.cholesky(a * 2 - 1)


a = torch.zeros(4, 4)
try:
    f(a)
    raise SystemExit("eager accepted the matrix")
except torch.linalg.LinAlgError as e:
    eager = e
try:
    torch.compile(f, backend=backend)(a)
    raise AssertionError(f"eager raises {eager!r}, compiled returns a value")
except torch.linalg.LinAlgError as e:
    assert str(e) == str(eager), f"compiled raises something else: {e}"
print("OK")
