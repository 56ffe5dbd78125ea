"""torch gives up on a frame: a graph break inside a try block cannot be resumed, so the whole
function runs eagerly from that compile on (torch logs it as a break and a failed compile)."""

import torch


@torch.compile(backend="eager")
def g(x):
    try:
        y = x + 1
        torch._dynamo.graph_break()  # line 11
        return y * 2
    except Exception:
        return x


for _ in range(2):
    g(torch.randn(3))
