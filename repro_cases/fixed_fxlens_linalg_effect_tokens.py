# fxlens corpus case: a fixed bug kept as a regression test (DESIGN.md style rule 11): linalg.inv,
# cholesky, solve, lu_factor, ldl_factor, tensorinv, tensorsolve crashed at run time with
# `AttributeError: 'NoneType' object has no attribute 'shape'` in the wrapper's fix_layout: their
# error checks run under `with_effects`, whose effect token AOTAutograd passes as None at run time.
# expect: exit 0
import sys

import torch


def fn(a, b):
    return torch.linalg.inv(a), torch.linalg.cholesky(a), torch.linalg.solve(a, b), torch.linalg.lu_factor(a)[0]


if __name__ == "__main__":
    g = torch.Generator().manual_seed(0)
    m = torch.randn(4, 4, generator=g)
    a, b = m @ m.T + torch.eye(4), torch.randn(4, 2, generator=g)
    try:
        got = torch.compile(fn, backend="fxlens")(a, b)
    except Exception as e:
        print(f"fxlens-signature: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", file=sys.stderr)
        sys.exit(1)
    for g_, w in zip(got, fn(a, b)):
        if not torch.allclose(g_, w, atol=1e-5):
            print("fxlens-signature: AccuracyError: compiled output diverges from eager", file=sys.stderr)
            sys.exit(1)
    print("ok")
