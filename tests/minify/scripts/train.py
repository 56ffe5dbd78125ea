"""One training step of the mlp model (forward and backward), compiled with the backend named on
the command line; `--dynamic` compiles with dynamic=True.

Usage: python train.py BACKEND [LAYERS] [--dynamic]
"""

import sys

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from mlp import Model  # noqa: E402

if __name__ == "__main__":
    backend = sys.argv[1]
    layers = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2].isdigit() else 2
    torch.manual_seed(0)
    model = Model(layers, relu_at=layers // 2)
    compiled = torch.compile(model, backend=backend, dynamic=True if "--dynamic" in sys.argv else None)
    loss = compiled(torch.randn(8, 16)).sum()
    loss.backward()
    print("ok", loss.item())
