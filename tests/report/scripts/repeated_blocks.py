"""A model whose forward runs four instances of one block class (and a head of another class),
compiled whole: Dynamo inlines all four into one graph. And an attention-like module with three
named Linear children (q, k, v), compiled alone, and a Sequential of torch's own layers: parts of
one block, not repeated blocks. Ground
truth for fxlens.report.blocks."""

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


class Attn(nn.Module):
    def __init__(self, d=8):
        super().__init__()
        self.q, self.k, self.v = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)

    def forward(self, x):
        return self.q(x) * self.k(x) + self.v(x)


if __name__ == "__main__":
    net = Net()
    print("blocks", len(net.blocks), type(net.blocks[0]).__name__)
    torch.compile(net, backend="eager")(torch.randn(3, 8))
    torch.compile(Attn(), backend="eager")(torch.randn(3, 8))
    # torch's own layers repeated in a Sequential: not blocks either
    mlp = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8))
    torch.compile(mlp, backend="eager")(torch.randn(3, 8))
