"""A forward that runs a 300-iteration Python loop over small layers: Dynamo unrolls it."""

import torch


class Stack(torch.nn.Module):
    def __init__(self, n=300):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(4, 4) for _ in range(n))

    def forward(self, x):
        x = x * 2
        for layer in self.layers:  # the loop
            x = torch.relu(layer(x))
        return x


model = torch.compile(Stack(), backend="eager")
print(model(torch.randn(2, 4)).shape)
