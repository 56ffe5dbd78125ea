"""A message-passing layer (index_add over edges) compiled whole, on graphs of three node counts."""

import torch

torch.manual_seed(0)


class MessagePassing(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x, edges):
        msg = self.lin(x)[edges[0]]
        return torch.zeros_like(x).index_add(0, edges[1], msg).relu()


layer = torch.compile(MessagePassing(), backend="eager")
for nodes in (10, 14, 20):
    x = torch.randn(nodes, 8)
    edges = torch.randint(0, nodes, (2, 3 * nodes))
    out = layer(x, edges)
print(tuple(out.shape))
