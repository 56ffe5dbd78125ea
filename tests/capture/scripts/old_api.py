"""torch 2.0's way to compile, as old bug reports write it; torch._dynamo is imported late."""

import sys

import torch

print("dynamo imported before the script asked:", "torch._dynamo" in sys.modules)
import torch._dynamo  # noqa: E402


def f(x):  # line 11
    return torch.sin(x) + 1


opt = torch._dynamo.optimize("eager")(f)  # line 15
print(float(opt(torch.ones(3)).sum()))
