"""Every way to compile: decorators, torch.compile(module), module.compile(), torch._dynamo.optimize."""

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

import torch._dynamo  # noqa: E402


def legacy(x):  # line 39
    return x * 2


old = torch._dynamo.optimize("eager")(legacy)  # line 43: how bug reports for torch 2.0 compile
for _ in range(2):
    assert torch.equal(old(torch.ones(3)), torch.ones(3) * 2)
