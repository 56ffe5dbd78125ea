"""A model whose forward runs four instances of one block class (and a head of another class),
compiled whole: Dynamo inlines all four into one graph. Ground truth for fxlens.report.blocks."""

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 2 * d)
        self.fc2 = nn.Linear(2 * d, d)

    def forward(self, x):
        return x + self.fc2(torch.relu(self.fc1(self.norm(x))))


class Net(nn.Module):
    def __init__(self, d=8, n=4):
        super().__init__()
        self.blocks = nn.ModuleList(Block(d) for _ in range(n))
        self.head = nn.Linear(d, 2)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)


if __name__ == "__main__":
    net = Net()
    print("blocks", len(net.blocks), type(net.blocks[0]).__name__)
    torch.compile(net, backend="eager")(torch.randn(3, 8))
