# fxlens corpus case: a fixed bug kept as a regression test (DESIGN.md style rule 11): training-mode
# batch norm in bfloat16 (`_batch_norm_with_update`) crashed Triton with "Cannot bitcast data-type
# of size 16 to data-type of size 32": the round-to-nearest-even helper for bf16 stores was handed
# a value a lowering already held as bf16. Found by the OpInfo sweep (tests/backend/test_opinfo.py).
# expect: exit 0
import sys

import torch


def fn(x, w, b, rm, rv):
    return torch.ops.aten._batch_norm_with_update(x, w, b, rm, rv, 0.1, 1e-5)[0]


def inputs():
    g = torch.Generator().manual_seed(0)
    x, w, b = torch.randn(2, 3, 4, generator=g), torch.randn(3, generator=g), torch.randn(3, generator=g)
    return [t.bfloat16() for t in (x, w, b, torch.zeros(3), torch.ones(3))]


if __name__ == "__main__":
    try:
        got = torch.compile(fn, backend="fxlens")(*inputs())
    except Exception as e:
        print(f"fxlens-signature: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", file=sys.stderr)
        sys.exit(1)
    if not torch.allclose(got.float(), fn(*inputs()).float(), atol=3e-2, rtol=3e-2):
        print("fxlens-signature: AccuracyError: compiled output diverges from eager", file=sys.stderr)
        sys.exit(1)
    print("ok")
