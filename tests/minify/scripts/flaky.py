"""A model whose backend (defined here, passed to torch.compile as a callable) fails two compiles
in three: the counter lives in the file FLAKY_COUNTER names, so fresh interpreters share it."""

import os

import torch


def flaky_backend(gm, example_inputs):
    if any(n.target is torch.relu for n in gm.graph.nodes):
        path = os.environ["FLAKY_COUNTER"]
        n = int(open(path).read() or 0) if os.path.exists(path) else 0
        with open(path, "w") as f:
            f.write(str(n + 1))
        if n % 3 != 2:
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
