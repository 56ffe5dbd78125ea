"""An optional import inside the compiled function: torch breaks on the failed import (its hint:
"Your code may result in an error when running in eager"), inside a try block it cannot resume a
graph across, so it gives up on the frame; the script runs fine eagerly (the ImportError is caught)."""

import torch


def step(x):
    try:
        import fxlens_no_such_module  # noqa: F401  -- an optional speed-up, absent here
    except ImportError:
        pass
    return (x * 2).sin().sum()


compiled = torch.compile(step, backend="eager")
x = torch.randn(256)
for _ in range(30):
    compiled(x)
