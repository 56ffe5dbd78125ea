"""Every way to compile: decorator, decorator factory, torch.compile(module), module.compile()."""

import torch


@torch.compile(backend="eager")  # line 6
def factory(x):
    return x + 1


@torch.compile  # line 11: bare decorator (inductor; never called, so never compiled)
def bare(x):
    return x - 1


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):  # line 21
        return self.lin(x).relu()


a = Net()
wrapped = torch.compile(a, backend="eager")  # line 26
b = Net()
b.compile(backend="eager")  # line 28
for _ in range(3):
    x = torch.ones(2, 4)
    assert torch.equal(wrapped(x), a(x))
    b(x)
    factory(x)
print(type(wrapped).__name__, sorted(n for n, _ in wrapped.named_parameters()))
