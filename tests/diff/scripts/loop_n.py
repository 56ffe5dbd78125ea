"""A loop over N small layers (N from the command line), unrolled by Dynamo: compile time grows with N."""

import sys

import torch


class Stack(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(4, 4) for _ in range(n))

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x


print(torch.compile(Stack(int(sys.argv[1])), backend="eager")(torch.randn(2, 4)).shape)
