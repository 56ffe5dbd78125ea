# fxlens corpus case: a fixed bug kept as a regression test (DESIGN.md style rule 11):
# F.embedding_bag in bfloat16 with per_sample_weights crashed fxlens's wrapper ("The size of tensor
# a (5) must match the size of tensor b (0)"): ATen's CPU kernel returns an empty offset2bag where
# the op's meta function says (5,), and the wrapper tried to copy it into that layout. Found by the
# OpInfo sweep (tests/backend/test_opinfo.py).
# expect: exit 0
import sys

import torch
import torch.nn.functional as F


def fn(w, i, o, psw):
    return F.embedding_bag(i, w, o, mode="sum", per_sample_weights=psw)


if __name__ == "__main__":
    g = torch.Generator().manual_seed(0)
    w = torch.randn(10, 5, generator=g).bfloat16()
    i, o = torch.tensor([1, 2, 4, 5, 4]), torch.tensor([0, 3])
    psw = torch.randn(5, generator=g).bfloat16()
    try:
        got = torch.compile(fn, backend="fxlens")(w, i, o, psw)
    except Exception as e:
        print(f"fxlens-signature: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", file=sys.stderr)
        sys.exit(1)
    if not torch.allclose(got.float(), fn(w, i, o, psw).float(), atol=2e-2, rtol=2e-2):
        print("fxlens-signature: AccuracyError: compiled output diverges from eager", file=sys.stderr)
        sys.exit(1)
    print("ok")
