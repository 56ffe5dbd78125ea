"""A module reads a class attribute; the script then sets it on the instance: torch guards that the
instance's __dict__ does not hold it (`not ___dict_contains(...)`), and that guard fails."""

import torch


class Policy(torch.nn.Module):
    step_count = 0  # a class attribute, shadowed by the instance's own once set

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x) * (self.step_count + 1)


p = Policy()
c = torch.compile(p, backend="eager")
c(torch.randn(2, 4))
p.step_count = 0
c(torch.randn(2, 4))
