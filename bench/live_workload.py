"""A compile-heavy workload for bench/live.py: 30 recompiles of one small function (aot_eager),
each size a new compile (dynamic shapes off), a line of output per step."""

import torch

torch._dynamo.config.recompile_limit = 64


def f(x):
    return (x.sin() * 2 + 1).cos().sum()


cf = torch.compile(f, backend="aot_eager", dynamic=False)
for n in range(1, 32):
    cf(torch.randn(n, 4))
    print("step", n, flush=True)
