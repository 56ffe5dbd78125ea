"""A recompile storm that holds a constant per shape: `table()` runs once per compile (Dynamo
calls an `assume_constant_result` function while tracing and keeps its result as a constant), and
`dynamic=False` compiles one graph per batch size: each graph holds its own 4 MiB copy."""

import torch


@torch._dynamo.assume_constant_result
def table():
    return torch.randn(256, 4096)  # 4 MiB


def lookup(x):
    return (x @ table()).sum()


SIZES = (8, 16, 24, 32, 40, 48)
f = torch.compile(lookup, backend="aot_eager", dynamic=False)
for n in SIZES:
    for _ in range(3):
        f(torch.randn(n, 256))
ARGS = (torch.randn(SIZES[-1], 256),)  # the call tests/doctor/memdriver.py measures again
