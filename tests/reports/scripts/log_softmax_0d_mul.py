"""
Issue: https://github.com/pytorch/pytorch/issues/190418
Title: [Inductor] IndexError in _other_is_broadcasted_in_dim when log_softmax receives 0D scalar from mul
Original report: log_softmax(dim=-1) applied to a 0-D tensor produced by a mul runs fine
eagerly, but torch.compile (inductor) crashes with IndexError: list index out of range in
torch/_inductor/fx_passes/joint_graph.py::_other_is_broadcasted_in_dim (mul_softmax_pattern),
because other_shape is [] for 0-D inputs and dim=-1 indexes it.
Adapted: CPU, small 0-D float32 inputs; compare compiled vs eager.
BACKEND env var selects the torch.compile backend (default inductor).
"""

import os

import torch

backend = os.environ.get("BACKEND", "inductor")


def fn(a, b):
    x = a * b
    return torch.log_softmax(x, dim=-1)


torch.manual_seed(0)
a = torch.randn(())
b = torch.randn(())
eager = fn(a, b)
print("eager OK:", eager)
compiled = torch.compile(fn, backend=backend)(a, b)
print("compiled OK:", compiled)
torch.testing.assert_close(compiled, eager)
print("OK")
