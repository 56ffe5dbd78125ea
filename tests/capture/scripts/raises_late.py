"""Compiles one graph, then raises: the session keeps what was captured, exit status is the script's."""

import sys

import torch


def f(x):  # line 8
    return x.sin() + 1


torch.compile(f, backend="eager")(torch.ones(3))
print("about to fail", file=sys.stderr)
sys.exit(7)
