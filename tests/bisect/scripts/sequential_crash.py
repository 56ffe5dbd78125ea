"""A backend that crashes on a compiled nn.Sequential (torch's relu_compile_error_TESTING_ONLY on
its torch.relu): the failing run's trace names the graph after torch's own frame (`inner`), the
runs that compiled it after the user's (`Sequential.forward`). Usage: sequential_crash.py [BACKEND]."""

import sys

import torch


class Act(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)


backend = sys.argv[1] if len(sys.argv) > 1 else "relu_compile_error_TESTING_ONLY"
model = torch.nn.Sequential(torch.nn.Linear(4, 4), Act())
out = torch.compile(model, backend=backend)(torch.randn(2, 4))
print(float(out.sum()))
