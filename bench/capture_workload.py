"""A compile-heavy workload for bench/capture.py: inductor, graph breaks, recompiles."""

import torch

torch._dynamo.config.automatic_dynamic_shapes = False


class Block(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.a = torch.nn.Linear(d, 4 * d)
        self.b = torch.nn.Linear(4 * d, d)
        self.norm = torch.nn.LayerNorm(d)

    def forward(self, x):
        h = torch.nn.functional.gelu(self.a(self.norm(x)))
        torch._dynamo.graph_break()
        return x + self.b(h)


model = torch.compile(torch.nn.Sequential(*[Block(32) for _ in range(3)]), backend="inductor")
for batch in (8, 4, 2, 1):
    for _ in range(3):
        model(torch.randn(batch, 32)).sum().backward()
