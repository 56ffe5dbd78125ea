"""
Issue: https://github.com/pytorch/pytorch/issues/196570 (and #188228)
Title: [inductor] CPP backend KeyError: 'bufN' - outer-loop local-buffer promotion assumes every
       user loads the buffer, which fails for a mutation-output buffer
Original report: an attention mask filled with torch.full, written in place by index_put, then
softmax(x + mask): inductor's CPP outer-loop fusion raises InductorError: KeyError: 'buf1' at
compile time; eager, aot_eager and aot_eager_decomp_partition are fine.
Adapted: as reported (CPU). BACKEND env var selects the torch.compile backend (default inductor).
"""

import os

import torch

backend = os.environ.get("BACKEND", "inductor")


def f(x):
    m = torch.full((8, 8), -10000.0)
    m[torch.arange(8).unsqueeze(0), torch.arange(8).unsqueeze(1)] = 0
    return torch.softmax(x + m, dim=-1)


x = torch.randn(8, 8)
eager = f(x)
compiled = torch.compile(f, backend=backend)(x)
torch.testing.assert_close(compiled, eager)
print("OK")
