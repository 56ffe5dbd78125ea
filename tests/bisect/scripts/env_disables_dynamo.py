"""Sets TORCHDYNAMO_DISABLE before importing torch. Dynamo reads it at import, so torch.compile
compiles nothing and the failing backend never runs: plain `python` of this script exits 0, and
bisect must say nothing fails (a run forked from a process that imported torch earlier would
compile, and fail)."""

import os

os.environ["TORCHDYNAMO_DISABLE"] = "1"

import torch  # noqa: E402

f = torch.compile(lambda x: torch.relu(x) + 1, backend="relu_compile_error_TESTING_ONLY")
print(float(f(torch.ones(4)).sum()))
