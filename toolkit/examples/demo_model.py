"""fxlens demo: a small training loop with the two problems users hit most.

- a graph break: the loss is logged with `.item()` inside forward;
- a recompile: the last batch of a `drop_last=False` DataLoader is shorter.
"""

import torch
from torch import nn

torch.manual_seed(0)


class TinyMLP(nn.Module):
    def __init__(self, d: int = 16):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.up = nn.Linear(d, 2 * d)
        self.down = nn.Linear(2 * d, d)

    def forward(self, x):
        h = nn.functional.gelu(self.up(self.norm(x)))
        out = x + self.down(h)
        if out.abs().mean().item() > 100:  # line 23: a Python branch on a tensor value breaks the graph
            print("activations are exploding")
        return out


model = TinyMLP()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
compiled = torch.compile(model, backend="inductor")
data = torch.randn(20, 16)
loader = torch.utils.data.DataLoader(
    data, batch_size=8, drop_last=False
)  # 8, 8, 4: the last batch recompiles
for batch in loader:
    loss = compiled(batch).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
print(f"final loss {loss.item():.4f}")
