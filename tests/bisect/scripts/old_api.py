"""A bug report's shape from before torch.compile: `torch._dynamo.optimize(backend)(model)`.

usage: old_api.py [BACKEND]   (default relu_compile_error_TESTING_ONLY)

Ground truth: relu sits only after the print, in the graph of forward's resume function (the
second graph compiled, compile id 1/0); torch's relu_* testing backends fail exactly there.
"""

import sys

import torch
import torch._dynamo


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        y = self.lin(x)
        print("graph break")
        return torch.relu(y) * 2


backend = sys.argv[1] if len(sys.argv) > 1 else "relu_compile_error_TESTING_ONLY"
torch.manual_seed(0)
model = Model().eval()
x = torch.randn(4, 8)
opt_model = torch._dynamo.optimize(backend, nopython=False)(model)
with torch.no_grad():
    torch.testing.assert_close(opt_model(x), model(x))
print("ok")
