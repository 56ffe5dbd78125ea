"""
Issue: https://github.com/pytorch/pytorch/issues/185246
Title: torch.compile silently accepts invalid Bernoulli probabilities that eager mode rejects
Original report: torch.bernoulli(p) with p outside [0, 1] raises a RuntimeError in eager; the
aten.bernoulli decomposition (rand() < p) has no range check, so compiled code returns ones
(p = 2.0) instead of raising.
Adapted: CPU, p = 2.0 everywhere; the script catches eager's error and asserts the compiled call
raises the same one. BACKEND env var selects the torch.compile backend (default inductor).
"""

import os

import torch

backend = os.environ.get("BACKEND", "inductor")
p = torch.full((16,), 2.0)


def fn(p):
    return torch.bernoulli(p)


try:
    fn(p)
    raise SystemExit("eager accepted p: nothing to report")
except RuntimeError as e:
    eager = e
print("eager raises:", str(eager).splitlines()[0])
try:
    out = torch.compile(fn, backend=backend)(p)
except RuntimeError as e:
    assert str(e) == str(eager), f"compiled raises something else: {e}"
    print("compiled raises the same")
else:
    raise AssertionError(f"eager raises {eager!r}, compiled returns {out}")
print("OK")
