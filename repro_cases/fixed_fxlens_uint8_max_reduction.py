# fxlens corpus case: a fixed bug kept as a regression test (DESIGN.md style rule 11): max/amax/
# argmax over uint8 crashed in Triton ("Cannot perform a binary operation between an unsigned tensor
# and a negative scalar"): the reduction's identity was -255 (minus iinfo.max) instead of
# iinfo.min, 0. Found by the OpInfo sweep (tests/backend/test_opinfo.py).
# expect: exit 0
import sys

import torch


def fn(x):
    return x.max(), x.amax(1), x.argmax(1), x.min(1).values


if __name__ == "__main__":
    x = torch.randint(0, 256, (6, 7), generator=torch.Generator().manual_seed(0), dtype=torch.uint8)
    try:
        got = torch.compile(fn, backend="fxlens")(x)
    except Exception as e:
        print(f"fxlens-signature: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", file=sys.stderr)
        sys.exit(1)
    if not all(torch.equal(g, w) for g, w in zip(got, fn(x))):
        print("fxlens-signature: AccuracyError: compiled integer output differs from eager", file=sys.stderr)
        sys.exit(1)
    print("ok")
