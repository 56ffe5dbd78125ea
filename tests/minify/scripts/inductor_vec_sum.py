"""A row sum whose vectorised C++ reduction drops the last element of each row's masked tail.

Rows of 20 floats reduce as one vector of 16 lanes and a masked tail of 4; with BUG=1 the tail's
lane count is one short (`sum_masked_reduce(acc, v, 3)`), the shape of a real masked-tail bug in a
vectorised reduction. The bug is injected by this script, not by inductor: it edits the C++ source
inductor generates, in `CppScheduling.define_kernel`, before inductor compiles it. BUG=0 (the
default) leaves inductor's source alone.

Usage: BUG=1 python inductor_vec_sum.py
"""

import os
import re

import torch
import torch._inductor.codegen.cpp as inductor_cpp

if os.environ.get("BUG") == "1":
    _define_kernel = inductor_cpp.CppScheduling.define_kernel
    _TAIL = re.compile(r"sum_masked_reduce\((\w+), (\w+), static_cast<int64_t>\((\d+)L\)\)")

    def define_kernel(self, src_code, nodes, kernel_args=None):
        src_code = _TAIL.sub(
            lambda m: f"sum_masked_reduce({m[1]}, {m[2]}, static_cast<int64_t>({int(m[3]) - 1}L))", src_code
        )
        return _define_kernel(self, src_code, nodes, kernel_args)

    inductor_cpp.CppScheduling.define_kernel = define_kernel


def rms(x):
    return torch.rsqrt((x * x).sum(dim=1) / x.shape[1] + 1e-6)


if __name__ == "__main__":
    torch.manual_seed(0)
    x = torch.randn(32, 20)
    got = torch.compile(rms, backend="inductor")(x)
    err = (got - rms(x)).abs().max().item()
    print(f"max abs error vs eager: {err:.3g}")
    if err > 1e-4:
        raise SystemExit("compiled output differs from eager")
