"""A model whose backend (defined here, passed to torch.compile as a callable) fails two compiles
in three: the counter lives in the file FLAKY_COUNTER names (locked: minify's workers compile at
the same time), so fresh interpreters share it."""

import fcntl
import os

import torch


def _next_count() -> int:
    with open(os.environ["FLAKY_COUNTER"], "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        n = int(f.read() or 0)
        f.seek(0)
        f.truncate()
        f.write(str(n + 1))
        return n


def flaky_backend(gm, example_inputs):
    if any(n.target is torch.relu for n in gm.graph.nodes) and _next_count() % 3 != 2:
        raise RuntimeError("flaky relu lowering failed")
    return gm


def model(x, w):
    for _ in range(6):
        x = torch.tanh(x @ w) + x.sin()
    x = torch.relu(x) * 2
    for _ in range(6):
        x = x.cos() + x.exp().mean()
    return x


if __name__ == "__main__":
    torch.manual_seed(0)
    print(torch.compile(model, backend=flaky_backend)(torch.randn(8, 8), torch.randn(8, 8)).sum())
