"""
Issue: https://github.com/pytorch/pytorch/issues/182131
Title: torch.compile/Inductor produces different result for float16 cast before elementwise add
Original report: z.to(float16) + x.to(float16): inductor computes the add in float32 and rounds
once, eager rounds each operand and the sum to float16; the script's assert_close(rtol=0, atol=0)
against eager fails. Closed as expected behaviour: the compiled value is the closer one to the
exact sum (emulate_precision_casts=True makes inductor match eager bit for bit).
Adapted: as reported, CPU. BACKEND env var selects the torch.compile backend (default inductor).
"""

import os

import torch

backend = os.environ.get("BACKEND", "inductor")
x = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4) / 10
c = (torch.arange(24) % 5 == 0).reshape(2, 3, 4)


def f(x, c):
    z = torch.where(c, torch.full_like(x, 0.5), torch.full_like(x, -0.5))
    y = z.to(torch.float16) + x.to(torch.float16)
    return y, y.float().sum()


eager = f(x, c)
compiled = torch.compile(f, backend=backend, fullgraph=True)(x, c)
print("max diff:", (eager[0].float() - compiled[0].float()).abs().max().item())
torch.testing.assert_close(compiled[0], eager[0], rtol=0, atol=0)
torch.testing.assert_close(compiled[1], eager[1], rtol=0, atol=0)
print("OK")
