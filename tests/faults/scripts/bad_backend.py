"""A backend that segfaults, aborts or hangs (FAULT env: segv, abort, hang) on graphs holding a
`mul`, and is fine on the others: the script compiles an add graph and a mul graph."""

import ctypes
import os
import time

import torch


def flaky(gm, example_inputs):
    if any(n.target in (torch.mul, "mul") or "mul" in str(n.target) for n in gm.graph.nodes):
        fault = os.environ.get("FAULT", "segv")
        if fault == "segv":
            ctypes.string_at(0)  # reads address 0: SIGSEGV
        elif fault == "abort":
            os.abort()
        elif fault == "hang":
            time.sleep(600)
    return gm.forward


def f(x):
    return x + 1


def g(x):
    return x * 3


if __name__ == "__main__":  # minify's workers import this file for `flaky`: no side effects then
    x = torch.ones(4)
    torch.compile(f, backend=flaky)(x)
    torch.compile(g, backend=flaky)(x)
