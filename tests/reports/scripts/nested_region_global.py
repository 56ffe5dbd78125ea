"""
Issue: https://github.com/pytorch/pytorch/issues/191821
Title: [nested compile region] silently incorrect result on global mutation
Original report: a torch.compiler.nested_compile_region reads a module-global dataclass
that the caller rebinds each loop iteration; torch.compile(fn, backend="eager",
fullgraph=True) returns 1 instead of 2 (the region reuses the first iteration's
captured global). Silent wrong number.
BACKEND env var selects the torch.compile backend (default eager, as in the report).
"""

import os
from dataclasses import dataclass

import torch

backend = os.environ.get("BACKEND", "eager")


@dataclass
class RegionInput:
    hidden: torch.Tensor


region_input = RegionInput(torch.tensor(0))


@torch.compiler.nested_compile_region
def region():
    return region_input.hidden + 1


def fn(hidden):
    global region_input
    for _ in range(2):
        region_input = RegionInput(hidden)
        hidden = region()
    return hidden


hidden = torch.tensor(0)
expected = fn(hidden)
actual = torch.compile(fn, backend=backend, fullgraph=True)(hidden)
print(f"expected: {expected}")
print(f"actual:   {actual}")
torch.testing.assert_close(actual, expected)
print("OK")
