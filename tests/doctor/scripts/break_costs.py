"""Two graph breaks of very different cost in one inductor-compiled function.

The break at `torch._dynamo.graph_break()` leaves nothing to run eagerly; the call of `heavy`
(disabled for Dynamo) runs 300 pointwise ops eagerly between two graphs. doctor must give each
break its own measured share of the compiled call, not the same figure for both.
`python break_costs.py [CALLS]`.
"""

import sys

import torch


@torch._dynamo.disable
def heavy(y):
    for _ in range(300):
        y = y * 1.0001
    return y


def step(x):
    y = x.sin()
    torch._dynamo.graph_break()
    y = y.cos() * 2
    z = heavy(y)
    return (z.relu() + y).sum()


cstep = torch.compile(step)
x = torch.randn(4096)
for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 20):
    out = cstep(x)
print(float(out))
