# fxlens corpus case: a fixed bug kept as a regression test (DESIGN.md style rule 11): layer_norm on
# an empty batch (input (0, 1)) crashed fxlens's codegen with `AttributeError: 'NoneType' object has
# no attribute 'load'`: var_mean's lowering built its variance pass on a mean the reduction lowering
# had declined (empty input). Found by the OpInfo sweep (tests/backend/test_opinfo.py).
# expect: exit 0
import sys

import torch
import torch.nn.functional as F


def fn(x, w, b):
    return F.layer_norm(x, (1,), w, b), torch.var_mean(x, 0)


if __name__ == "__main__":
    x, w, b = torch.randn(0, 1), torch.randn(1), torch.randn(1)
    try:
        got = torch.compile(fn, backend="fxlens")(x, w, b)
    except Exception as e:
        print(f"fxlens-signature: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", file=sys.stderr)
        sys.exit(1)
    want = fn(x, w, b)
    if got[0].shape != want[0].shape or not all(torch.allclose(g, w_, equal_nan=True) for g, w_ in zip(got[1], want[1])):
        print("fxlens-signature: AccuracyError: compiled output diverges from eager", file=sys.stderr)
        sys.exit(1)
    print("ok")
