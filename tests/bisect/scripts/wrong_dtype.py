"""A backend (the script's own) whose integer outputs come back as int64 where eager returns int8
(issue 34: "no compiled graph raised or diverged", since the values are equal). The script checks
the dtype. A first argument names a registered backend instead (the ladder by hand).
Usage: wrong_dtype.py [BACKEND]."""

import sys

import torch


def int64_outputs(gm, example_inputs):
    def run(*args):
        outs = gm(*args)
        return type(outs)(
            o.to(torch.int64) if isinstance(o, torch.Tensor) and o.dtype == torch.int8 else o for o in outs
        )

    return run


def quantize(x):
    return (x * 10).round().clamp(-128, 127).to(torch.int8)


backend = sys.argv[1] if len(sys.argv) > 1 else int64_outputs
q = torch.compile(quantize, backend=backend)(torch.randn(16))
assert q.dtype == torch.int8, f"quantize returned {q.dtype}"
print("ok")
