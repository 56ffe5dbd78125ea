"""
Issue: https://github.com/pytorch/pytorch/issues/193265 (the crash), in the shape of
https://github.com/pytorch/pytorch/issues/191821 (a `torch.compiler.nested_compile_region` called
twice inside a fullgraph compile)
Title: [inductor] torch.compile fails to compile cumsum on a 0-dim constant tensor
Original report: `torch.tensor(5.0).cumsum(0)` fails in inductor's `pointless_cumsum_replacement`
(InductorError: IndexError). Here that constant is built inside a nested compile region, whose
body Dynamo keeps as a subgraph (`invoke_subgraph`); eager and aot_eager run it.
BACKEND env var selects the torch.compile backend (default inductor).
"""

import os

import torch

backend = os.environ.get("BACKEND", "inductor")


@torch.compiler.nested_compile_region
def region(x):
    return x * torch.tensor(5.0).cumsum(0)


def fn(x):
    return region(region(x) + 1)


x = torch.randn(4)
print(torch.compile(fn, backend=backend, fullgraph=True)(x))
