# fxlens corpus case: a fixed bug kept as a regression test (DESIGN.md style rule 11): an in-place
# op on a view of a graph input under aot_eager must match eager, forward and backward.
# expect: exit 0
import sys

import torch


class Repro(torch.nn.Module):
    def forward(self, arg0, arg1):
        view = arg0.view(2, 4)
        view.mul_(2)
        return (torch.relu(view) + arg1, arg0.sum())


def make_inputs():
    g = torch.Generator().manual_seed(0)
    return [torch.randn(8, generator=g), torch.randn(2, 4, generator=g, requires_grad=True)]


if __name__ == "__main__":
    eager = Repro()(*make_inputs())
    compiled = torch.compile(Repro(), backend="aot_eager")(*make_inputs())
    for e, c in zip(eager, compiled):
        if not torch.allclose(e, c):
            print("fxlens-signature: AccuracyError: compiled output diverges from eager", file=sys.stderr)
            sys.exit(1)
    compiled[0].sum().backward()
    print("ok")
