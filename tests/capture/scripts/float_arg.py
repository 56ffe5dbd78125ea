"""A Python float argument that changes on every call (a scale, a temperature).

argv[1] applies a fix by hand: `specialize_float` (torch._dynamo.config.specialize_float = False),
`dynamic` (torch.compile(..., dynamic=True)); none: as a user wrote it.
"""

import sys

import torch

mode = sys.argv[1] if len(sys.argv) > 1 else ""
if mode == "specialize_float":
    torch._dynamo.config.specialize_float = False


def scaled(x, scale):
    return x * scale


compiled = torch.compile(scaled, backend="eager", dynamic=True if mode == "dynamic" else None)
for s in (0.5, 0.25, 0.125, 0.0625):
    compiled(torch.randn(4), s)
