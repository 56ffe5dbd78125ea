"""Sets TORCH_COMPILE_DISABLE before importing torch. Dynamo's config module reads it when it is
imported, so torch.compile compiles nothing and the failing backend never runs: plain `python` of
this script exits 0, and bisect must say nothing fails. A run forked from a process that imported
Dynamo before the script ran would ignore it, compile, and fail."""

import os

os.environ["TORCH_COMPILE_DISABLE"] = "1"

import torch  # noqa: E402

f = torch.compile(lambda x: torch.relu(x) + 1, backend="relu_compile_error_TESTING_ONLY")
print(float(f(torch.ones(4)).sum()))
