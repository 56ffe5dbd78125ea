"""A loop of 40 small layers, unrolled by Dynamo (the TUI's by-line tree)."""

import torch


class Stack(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(4, 4) for _ in range(40))

    def forward(self, x):
        for layer in self.layers:  # the loop
            x = torch.relu(layer(x))
        return x


print(torch.compile(Stack(), backend="eager")(torch.randn(2, 4)).shape)
