"""A backend (the script's own) whose backward compiler mishandles bfloat16 activations, called
under the caller's `torch.autocast`, with the script's backward after the autocast block (issue 34:
a backward-only AOTAutograd difference under autocast got no reproducer from any check).

The forward is exact. Under autocast AOTAutograd saves the matmul's bfloat16 operands for the
backward graph; `bf16_backward_bug`'s backward compiler adds 0.5 to every gradient when it is handed
bfloat16 tensors (and is right on float32, so the bug is gone without autocast). The script checks
the weight's gradient against eager's, taken the same way. A first argument names a registered
backend instead (the ladder by hand). Usage: autocast_backward.py [BACKEND].
"""

import sys

import torch
from torch._dynamo.backends.common import aot_autograd


def _forward(gm, example_inputs):
    return gm


def _backward(gm, example_inputs):
    bf16 = any(isinstance(t, torch.Tensor) and t.dtype == torch.bfloat16 for t in example_inputs)

    def run(*args):
        grads = gm(*args)
        return [g + 0.5 if bf16 and isinstance(g, torch.Tensor) else g for g in grads]

    return run


bf16_backward_bug = aot_autograd(fw_compiler=_forward, bw_compiler=_backward)


def layer(x, w):
    return torch.relu(x @ w).sum(dim=1)


def grad_of_w(fn, x, w0):
    w = w0.clone().requires_grad_(True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = fn(x, w).float().sum()
    loss.backward()  # outside the autocast block, as autocast's docs recommend
    return w.grad


torch.manual_seed(0)
x, w0 = torch.randn(4, 8), torch.randn(8, 6)
expected = grad_of_w(layer, x, w0)
backend = sys.argv[1] if len(sys.argv) > 1 else bf16_backward_bug
got = grad_of_w(torch.compile(layer, backend=backend), x, w0)
torch.testing.assert_close(got, expected, atol=1e-2, rtol=1e-2)
print("ok")
