"""
Issue: https://github.com/pytorch/pytorch/issues/193265
Title: [inductor] torch.compile fails to compile cumsum on a 0-dim constant tensor: IndexError:
tuple index out of range
Original report: `torch.tensor(5.0).cumsum(0)` in a compiled function with no arguments (the
graph has no inputs: its only tensor is built inside it); inductor raises InductorError:
IndexError in `pointless_cumsum_replacement`, eager and aot_eager return tensor(5.).
BACKEND env var selects the torch.compile backend (default inductor, as in the report).
"""

import os

import torch

backend = os.environ.get("BACKEND", "inductor")


def f():
    return torch.tensor(5.0).cumsum(0)


print(torch.compile(f, backend=backend)())
