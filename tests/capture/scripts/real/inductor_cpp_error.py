"""An inductor C++ compile error, made with inductor's own testing switch; the script writes the
exception's text to argv[1] (the oracle the report's failure text is checked against)."""

import sys

import torch
import torch._inductor.config as inductor_config

inductor_config.cpp.inject_relu_bug_TESTING_ONLY = "compile_error"


@torch.compile
def f(x):
    return torch.relu(x) + 1


try:
    f(torch.randn(8))
except Exception as e:  # noqa: BLE001 -- the script reports what torch raised
    with open(sys.argv[1], "w") as out:
        out.write(str(e))
