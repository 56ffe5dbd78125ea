"""A backend (the script's own) whose backward is wrong and whose forward is slightly off, in a
forward-only script (issue 34: bisect judged it on gradients the script never takes).

`bad_grads` doubles every gradient, and with `shifted` also adds 1e-2 to the forward outputs (then
the script fails: it checks only the forward output against eager, at tolerance 1e-3; without,
it passes); `backward` (forward exact) also runs backward and checks the weight's gradient, which
fails. A second argument names a registered backend to use instead (the ladder by hand). Usage:
backward_only.py [shifted|exact|backward] [BACKEND].
"""

import sys

import torch
from torch._dynamo.backends.common import aot_autograd

MODE = (sys.argv[1:] or ["shifted"])[0]
SHIFT = 1e-2 if MODE == "shifted" else 0.0


def _shifted(gm, example_inputs):
    return lambda *args: [o + SHIFT for o in gm(*args)]


def _doubled(gm, example_inputs):
    return lambda *args: [None if g is None else g * 2 for g in gm(*args)]


bad_grads = aot_autograd(fw_compiler=_shifted, bw_compiler=_doubled)

model = torch.nn.Linear(8, 4)  # parameters require grad; only `backward` runs backward
x = torch.randn(3, 8)
expected = model(x)
backend = sys.argv[2] if len(sys.argv) > 2 else bad_grads
got = torch.compile(model, backend=backend)(x)
torch.testing.assert_close(got, expected, atol=1e-3, rtol=0)
if MODE == "backward":
    (want,) = torch.autograd.grad(expected.sum(), model.weight)
    (grad,) = torch.autograd.grad(got.sum(), model.weight)
    torch.testing.assert_close(grad, want)
print("ok")
