"""
Issue: https://github.com/pytorch/pytorch/issues/188222
Title: [aot_autograd] `RuntimeError: view size is not compatible ... use .reshape()` under `torch.compile`
Original report: maximum -> sinh -> grouped 1x1 Conv2d -> matrix_exp runs eagerly, but
torch.compile(backend="inductor") fails with RuntimeError: view size is not compatible with
input tensor's size and stride ... Use .reshape(...) instead (functionalization emits a
`view` on a non-contiguous tensor). CPU repro.
Observed on torch 2.13.0+cpu: compile succeeds; the RuntimeError is raised when the
compiled inductor module runs (generated call() -> aten op under AOT runtime wrapper).
BACKEND env var selects the torch.compile backend (default inductor).
"""

import os

import torch

backend = os.environ.get("BACKEND", "inductor")

_m_t32247 = torch.nn.Conv2d(
    8, 18, 1, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=2, bias=False
).eval()

torch.manual_seed(0)
t32242 = torch.rand([3, 8, 8, 8], dtype=torch.float32)


def model_334():
    t32243 = torch.maximum(t32242, t32242)
    t32244 = torch.sinh(t32243)
    t32247 = _m_t32247(t32244)
    t32253 = torch.matrix_exp(t32247)
    return t32253


with torch.no_grad():
    eager_out = model_334()
    print("eager OK:", type(eager_out))
    compiled = torch.compile(model_334, backend=backend)
    compiled_out = compiled()
    print("compiled OK:", type(compiled_out))
torch.testing.assert_close(compiled_out, eager_out, rtol=1e-4, atol=1e-4)
print("OK")
