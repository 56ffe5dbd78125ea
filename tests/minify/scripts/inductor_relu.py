"""inductor with its C++ relu fault switched on by config (the script sets it, minify carries it).

Usage: python inductor_relu.py compile_error|runtime_error|accuracy [LAYERS]
"""

import sys

import torch
import torch._inductor.config

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from mlp import Model  # noqa: E402

if __name__ == "__main__":
    torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = sys.argv[1]
    layers = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    torch.manual_seed(0)
    model = Model(layers, relu_at=layers // 2)
    x = torch.randn(8, 16)
    with torch.no_grad():
        out = torch.compile(model, backend="inductor")(x)
        ref = model(x)
    if not torch.allclose(out, ref, atol=1e-4):
        raise SystemExit("compiled output differs from eager")
    print("ok")
