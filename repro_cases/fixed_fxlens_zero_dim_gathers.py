# fxlens corpus case: a fixed bug kept as a regression test (DESIGN.md style rule 11): gathers from a
# 0-d tensor (index_select, index_add/index_copy/index_reduce, gather, and the backward of
# median/nanmedian with dim=0, keepdim=True) raised IndexError in fxlens's view lowerings
# (`x.shape[dim]` of a 0-d source).
# expect: exit 0
import sys

import torch


def fwd(x, i):
    s = torch.tensor(2.0)
    return (
        torch.index_select(x, 0, i), torch.gather(x, 0, i[0]), x.index_add(0, i, s), x.index_copy(0, i, s),
        x.index_reduce(0, i, s, "prod"),
    )


def bwd(x):
    return torch.median(x, 0, keepdim=True)[0] * 2 + torch.nanmedian(x, 0, keepdim=True)[0]


if __name__ == "__main__":
    x, i = torch.tensor(3.0), torch.tensor([0])
    try:
        got = torch.compile(fwd, backend="fxlens")(x, i)
        xg = torch.tensor(3.0, requires_grad=True)
        torch.compile(bwd, backend="fxlens")(xg).backward()
    except Exception as e:
        print(f"fxlens-signature: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", file=sys.stderr)
        sys.exit(1)
    bad = [k for k, (g, w) in enumerate(zip(got, fwd(x, i))) if g.shape != w.shape or not torch.equal(g, w)]
    if bad or xg.grad.item() != 3.0:
        print(f"fxlens-signature: AccuracyError: outputs {bad} / grad {xg.grad} differ from eager", file=sys.stderr)
        sys.exit(1)
    print("ok")
