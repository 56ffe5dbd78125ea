"""A compile error Dynamo swallows (suppress_errors): the script exits 0, the backend still failed."""

import torch

torch._dynamo.config.suppress_errors = True


@torch.compile(backend="relu_compile_error_TESTING_ONLY")
def head(x):
    return torch.relu(x) + 1


print(float(head(torch.randn(3)).sum()))
