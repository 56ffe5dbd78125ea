"""
Issue: https://github.com/pytorch/pytorch/issues/193757
Title: [inductor][cpu] torch.compile silently accepts `binary_cross_entropy` targets outside
       `[0, 1]` that eager rejects
Original report: eager raises `RuntimeError: all elements of target should be between 0 and 1`
for a target of 1.5; torch.compile returns tensor(-50.). The aten.binary_cross_entropy
decomposition has no check on the target, so every backend that decomposes
(aot_eager_decomp_partition, inductor) returns a value.
Adapted: the script catches eager's error and asserts the compiled call raises the same one.
BACKEND env var selects the torch.compile backend (default inductor).
"""

import os

import torch

backend = os.environ.get("BACKEND", "inductor")
target = torch.ones(4, 4) * 1.5  # invalid: outside [0, 1]


def fn(t):
    return torch.nn.functional.binary_cross_entropy(torch.ones_like(t), t)


try:
    fn(target)
    raise SystemExit("eager accepted the target: nothing to report")
except RuntimeError as e:
    eager = e
print("eager raises:", eager)
try:
    out = torch.compile(fn, backend=backend)(target)
except RuntimeError as e:
    assert str(e) == str(eager), f"compiled raises something else: {e}"
    print("compiled raises the same")
else:
    raise AssertionError(f"eager raises {eager!r}, compiled returns {out}")
print("OK")
