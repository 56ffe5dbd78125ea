"""A ~15-nodes-per-layer model with one special op (torch.relu by default, `--op erf`), compiled with
the backend named on the command line; `--no-relu` leaves the special op out.

Usage: python mlp.py BACKEND [LAYERS] [--op relu|erf] [--no-relu]
"""

import sys

import torch


class Block(torch.nn.Module):
    def __init__(self, dim, relu):
        super().__init__()
        self.norm = torch.nn.LayerNorm(dim)
        self.fc1 = torch.nn.Linear(dim, 2 * dim)
        self.fc2 = torch.nn.Linear(2 * dim, dim)
        self.relu = relu

    def forward(self, x):
        h = self.fc1(self.norm(x))
        h = self.relu(h) if self.relu else torch.nn.functional.softplus(h)
        h = torch.tanh(self.fc2(h)) * 0.5 + torch.sigmoid(h[..., : x.shape[-1]])
        return x + h.mul(0.9).sub(0.1).abs().sqrt()


class Model(torch.nn.Module):
    def __init__(self, layers, relu_at, op=torch.relu):
        super().__init__()
        self.blocks = torch.nn.ModuleList(Block(16, op if i == relu_at else None) for i in range(layers))
        self.head = torch.nn.Linear(16, 4)

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return self.head(x).softmax(-1)


if __name__ == "__main__":
    backend = sys.argv[1]
    layers = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2].isdigit() else 6
    relu_at = -1 if "--no-relu" in sys.argv else layers // 2
    op = sys.argv[sys.argv.index("--op") + 1] if "--op" in sys.argv else "relu"
    torch.manual_seed(0)
    model = Model(layers, relu_at, getattr(torch, op))
    x = torch.randn(8, 16)
    compiled = torch.compile(model, backend=backend)
    with torch.no_grad():
        out = compiled(x)
        ref = model(x)
    if not torch.allclose(out, ref, atol=1e-4):
        raise SystemExit("compiled output differs from eager")
    print("ok", out.shape)
