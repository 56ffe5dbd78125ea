# fxlens corpus case: a fixed bug kept as a regression test (DESIGN.md style rule 11): torch.kron's
# backward (a sum of 200 products per gradient element) had 4x eager's error against fp64: under
# the Triton interpreter a `tl.reduce` with fxlens's own combine function folds a row one element
# at a time, while eager sums pairwise. Sums now pass tl.sum's combine function (numpy's pairwise
# sum in the interpreter; the same tree as before on a GPU).
# expect: exit 0
import sys

import torch


def grads(fn, a, b, g):
    a, b = a.clone().requires_grad_(), b.clone().requires_grad_()
    return torch.autograd.grad(fn(a, b), (a, b), g)


if __name__ == "__main__":
    gen = torch.Generator().manual_seed(0)
    a, b, g = torch.randn(5, 5, generator=gen), torch.randn(10, 20, generator=gen), torch.randn(50, 100, generator=gen)
    ref = grads(torch.kron, a.double(), b.double(), g.double())
    eager = grads(torch.kron, a, b, g)
    compiled = grads(torch.compile(torch.kron, backend="fxlens"), a, b, g)
    for r, e, c in zip(ref, eager, compiled):
        err_e, err_c = float((e - r).abs().max()), float((c - r).abs().max())
        if err_c > 2 * err_e + 1e-6:
            print(f"compiled error {err_c:.2e}, eager {err_e:.2e}", file=sys.stderr)
            print("fxlens-signature: AccuracyError: compiled gradient less accurate than eager", file=sys.stderr)
            sys.exit(1)
    print("ok")
