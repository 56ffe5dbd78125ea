"""An inductor C++ compile error (torch's cpp.inject_relu_bug_TESTING_ONLY) in a script whose runs
leave every compiled kernel `.so` cut short (as a run killed while writing its kernels does;
TRUNCATE=0 turns it off). CompilerBisector steps sharing one inductor cache then load an earlier
step's truncated kernel ("file too short"): a failure that is not the script's (issue 34)."""

import glob
import os

import torch
import torch._inductor.config

torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "compile_error"


def f(x, y):
    return x.sin().sum(), y.relu() * 2


try:
    a, b = torch.compile(f)(torch.randn(8), torch.randn(16))
    print("ok", float(a), float(b.sum()))
finally:
    if os.environ.get("TRUNCATE", "1") == "1":
        # a step killed while it wrote its kernels: every compiled kernel cut short
        cache = os.environ.get("TORCHINDUCTOR_CACHE_DIR", "/nonexistent")
        for so in glob.glob(os.path.join(cache, "**", "*.so"), recursive=True):
            os.truncate(so, 0)
