"""`(a + b).max(dim=1)` on a transposed `a`: the int64 indices come back all zero.

The shape of pytorch/pytorch#178964 ("[inductor] `max` returns incorrect indices when compiling a
function includes `(a + b).max(dim=1)`", an 8x8 transposed input; the values are right, the
indices are all zeros). Torch 2.13 no longer has the bug, so with BUG=1 this script plants it: it
edits the C++ source inductor generates (in `CppScheduling.define_kernel`, before inductor compiles
it) so that the vectorised argmax combine is given index 0 for every element, which is what the
report shows. BUG=0 (the default) leaves inductor's source alone. BACKEND picks the backend.

Usage: BUG=1 python inductor_max_index.py
"""

import os
import re

import torch
import torch._inductor.codegen.cpp as inductor_cpp

if os.environ.get("BUG") == "1":
    _define_kernel = inductor_cpp.CppScheduling.define_kernel
    # argmax_combine_vec<float, 1, 2, false>(acc, value, INDEX, n): the index of the vector's lane 0
    _INDEX = re.compile(r"(argmax_combine_vec<[^>]*>\(\w+, \w+, )([^,]+)(, )")

    def define_kernel(self, src_code, nodes, kernel_args=None):
        src_code = _INDEX.sub(lambda m: f"{m[1]}static_cast<int64_t>(0L){m[3]}", src_code)
        return _define_kernel(self, src_code, nodes, kernel_args)

    inductor_cpp.CppScheduling.define_kernel = define_kernel


def fn(a, b):
    return (a + b).max(dim=1)


if __name__ == "__main__":
    torch.manual_seed(0)
    a = torch.randn(8, 8).transpose(0, 1)  # the report's shape: 8x8, transposed
    b = torch.randn(8, 8)
    want = fn(a, b)
    got = torch.compile(fn, backend=os.environ.get("BACKEND", "inductor"))(a, b)
    print("eager indices:   ", want.indices.tolist())
    print("compiled indices:", got.indices.tolist())
    torch.testing.assert_close(got.values, want.values)
    if not torch.equal(got.indices, want.indices):
        raise SystemExit("compiled max indices differ from eager")
