"""torch.compile(fullgraph=True) raising at the first call: a graph break is an error there.

The script catches the error and goes on eagerly, as a training script with a fallback does; the
compiled module was called (once), and its compile failed.
"""

import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x)
        print("step")  # a graph break: with fullgraph=True, an error
        return y.relu()


model = Net()
compiled = torch.compile(model, backend="eager", fullgraph=True)
try:
    compiled(torch.randn(2, 4))
except Exception as e:  # noqa: BLE001 -- the fallback a script keeps
    print("compile failed:", type(e).__name__)
    model(torch.randn(2, 4))
