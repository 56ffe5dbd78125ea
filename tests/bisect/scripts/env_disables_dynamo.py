"""Sets TORCH_COMPILE_DISABLE before importing torch, through a local module of its own
(compile_settings.py: bisect must read the modules a script imports). Dynamo's config module reads
it when it is imported, so torch.compile compiles nothing and the failing backend never runs: plain `python` of
this script exits 0, and bisect must say nothing fails. A run forked from a process that imported
Dynamo before the script ran would ignore it, compile, and fail."""

import compile_settings  # noqa: F401 - sets TORCH_COMPILE_DISABLE
import torch

f = torch.compile(lambda x: torch.relu(x) + 1, backend="relu_compile_error_TESTING_ONLY")
print(float(f(torch.ones(4)).sum()))
