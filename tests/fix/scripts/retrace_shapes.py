"""A model compiled with `dynamic=False` and called at eight sequence lengths: Dynamo traces its
forward again for each new size.

The forward holds enough ops (a small MLP applied 12 times) that each trace costs a measurable
share of a second; `dynamic=False` turns torch's automatic dynamic shapes off, so every length is
a compile of its own until the length is marked dynamic.
"""

import torch


class Mixer(torch.nn.Module):
    def __init__(self, width=16, depth=12):
        super().__init__()
        self.depth = depth
        self.up = torch.nn.Linear(width, 2 * width)
        self.down = torch.nn.Linear(2 * width, width)

    def forward(self, x):
        x = x * 2
        for _ in range(self.depth):
            h = torch.nn.functional.gelu(self.up(x))
            x = torch.layer_norm(x + self.down(h), x.shape[-1:])
        return x.mean(dim=1)


torch.manual_seed(0)
model = torch.compile(Mixer(), backend="eager", dynamic=False)
for length in (8, 12, 16, 20, 24, 28, 32, 36):
    print(model(torch.randn(2, length, 16)).shape)
