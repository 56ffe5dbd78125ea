# fxlens corpus case: a fixed bug kept as a regression test (DESIGN.md style rule 11): `torch.add(a,
# b, alpha=-3)` on uint8 tensors crashed in Triton ("Cannot perform a binary operation between an
# unsigned tensor and a negative scalar"). Eager casts the scalar into uint8 (-3 -> 253), and so
# does the kernel now.
# expect: exit 0
import sys

import torch


def fn(a, b):
    return torch.add(a, b, alpha=-3), a - 5, a * -1


if __name__ == "__main__":
    gen = torch.Generator().manual_seed(0)
    a, b = (torch.randint(0, 255, (5, 5), generator=gen, dtype=torch.uint8) for _ in range(2))
    try:
        got = torch.compile(fn, backend="fxlens")(a, b)
    except Exception as e:
        print(f"fxlens-signature: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", file=sys.stderr)
        sys.exit(1)
    if not all(torch.equal(g, w) for g, w in zip(got, fn(a, b))):
        print("fxlens-signature: AccuracyError: compiled integer output differs from eager", file=sys.stderr)
        sys.exit(1)
    print("ok")
