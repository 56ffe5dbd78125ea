"""A forward that calls a pure-Python helper Dynamo traces at length and that makes no tensor op.

`check_schedule` recomputes a warm-up schedule in Python to check it; Dynamo traces every step of
it inside the compiled forward (most of Dynamo's seconds) and the graph gets no op from it.
"""

import torch


def check_schedule(steps):
    """A check of a schedule, all Python: no tensor is touched."""
    bad = 0
    for i in range(steps):
        if (i * 37) % 11 > 9:
            bad += 1
    return bad


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        check_schedule(8000)
        return torch.relu(self.lin(x))


torch.manual_seed(0)
model = torch.compile(Net(), backend="eager")
print(model(torch.randn(4, 8)).sum().item())
