"""Eager rounds a Python scalar to bfloat16 (`torch.full_like(x, 0.1)` holds 0.10009765625); a
compiled graph that computes in float32 keeps 0.1 (inductor does; `upcast`, the script's own
backend, does the same in a few lines). The compiled value is the closer to fp64, and the script,
comparing exactly with eager, fails: a semantics difference (issue 34). Usage:
scalar_rounding.py [upcast|BACKEND]."""

import sys

import torch


def upcast(gm, example_inputs):
    """Run the graph in float32 and round its outputs back, as a fusing compiler does."""

    def run(*args):
        wide = [a.float() if isinstance(a, torch.Tensor) and a.dtype == torch.bfloat16 else a for a in args]
        return [o.bfloat16() if o.dtype == torch.float32 else o for o in gm(*wide)]

    return run


def f(x):
    return torch.full_like(x, 0.1) * x


name = sys.argv[1] if len(sys.argv) > 1 else "upcast"
backend = upcast if name == "upcast" else name
x = torch.randn(4096).bfloat16()
torch.testing.assert_close(torch.compile(f, backend=backend)(x), f(x), atol=0, rtol=0)
print("ok")
