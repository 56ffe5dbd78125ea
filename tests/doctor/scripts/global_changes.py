"""A compiled function that reads a module global, which the script changes after its last call.

Dynamo guards on the global's value, so doctor's replay after the script (the global changed)
compiles again: that compile is doctor's, and must never appear as the script's recompile.
"""

import torch

SCALE = 2.0


@torch.compile(backend="eager")
def scaled(x):
    return x * SCALE + 1


x = torch.randn(64)
for _ in range(20):
    y = scaled(x)
SCALE = 3.0  # after the last call: the script itself never recompiles
print(float(y.sum()))
