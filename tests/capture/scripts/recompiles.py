"""Recompiles from batch size, dtype, requires_grad, train/eval and a global flag."""

import torch

USE_BIAS = True


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.drop = torch.nn.Dropout(0.1)

    def forward(self, x):
        y = self.drop(self.lin(x))
        return y + 1 if USE_BIAS else y


def scale(x):  # line 19
    return x * 2 + 1


torch._dynamo.config.automatic_dynamic_shapes = False
net = torch.compile(Net(), backend="eager")
# a drop_last=False loader: 10 samples, batch 4 -> 4, 4, 2
data = torch.randn(10, 4)
for batch in torch.utils.data.DataLoader(data, batch_size=4, drop_last=False):
    net(batch)
net.eval()
net(torch.randn(4, 4))
USE_BIAS = False
net(torch.randn(4, 4))

f = torch.compile(scale, backend="eager")
f(torch.ones(3))
f(torch.ones(3, dtype=torch.float64))
f(torch.ones(3, requires_grad=True))
