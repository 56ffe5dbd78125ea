"""
Issue: https://github.com/pytorch/pytorch/issues/193265
Title: [inductor] torch.compile fails to compile cumsum on a 0-dim constant tensor: IndexError:
tuple index out of range
Original report: `torch.tensor(5.0).cumsum(0)` inside a compiled function (a graph with no inputs)
fails in inductor's post-grad pattern `pointless_cumsum_replacement` with InductorError:
IndexError; eager and aot_eager are fine. Shaped here as a model that compiles 7 graphs (six
matmul blocks, one graph per weight shape, and the scale graph), as a user's script would.
BACKEND env var selects the torch.compile backend (default inductor, as in the report).
"""

import os

import torch

backend = os.environ.get("BACKEND", "inductor")


def block(x, w):
    return x @ w


def scale():
    return torch.tensor(5.0).cumsum(0)


def forward(x, ws):
    for w in ws:
        x = torch.compile(block, backend=backend, dynamic=False)(x, w)
    return x * torch.compile(scale, backend=backend)()


torch.manual_seed(0)
x = torch.randn(8, 8)
ws = [torch.randn(8, 8 + i) if i == 0 else torch.randn(8 + i - 1, 8 + i) for i in range(6)]
out = forward(x, ws)
print("OK", tuple(out.shape))
