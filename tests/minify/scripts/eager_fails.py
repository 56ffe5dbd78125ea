"""Fails in eager too: a shape error in the user's own code (not a compiler bug)."""

import torch


def model(x):
    return torch.relu(x) @ torch.ones(3, 3)


if __name__ == "__main__":
    print(torch.compile(model, backend="aot_eager")(torch.randn(4, 5)))
