# expect: exit 1, fxlens-signature: raise: CppCompileError
# corpus: slow (an inductor C++ compile)
"""fxlens kernel reproducer: cpp_fused_relu_3 (aten.relu.default)

kernel    cpp_fused_relu_3: inductor C++ kernel of 1 post-grad node(s)
graph     inference graph of compile 0/0 (backend inductor)
user line File "/work/wt/i35/tests/minify/scripts/mlp.py", line 22, in forward: h = self.relu(h) if self.relu else torch.nn.functional.softplus(h)
failure   in the script's run: raises CppCompileError: C++ compile error
launch    (none)  (tensors: none)
inputs    the .pt file of the same name beside this script (torch.load(weights_only=True))
versions  torch 2.13.0+cpu, triton 3.9.0, python 3.11.7, fxlens 0.1.0, C++ compiled by inductor (torch._inductor.async_compile) on x86_64
made by   fxlens minify --kernel tests/minify/scripts/inductor_relu.py compile_error 2

Run: python THIS_FILE (CPU: Triton's interpreter; CUDA when present: compiled). Exit 1 with the
largest error against eager in float64, its element and the op; or the launch's own exception;
exit 0 when the kernel agrees with eager. Imports torch and triton only.
note: the kernel never compiled, so it never ran: no launch, no inputs
"""


import sys

from torch._inductor.async_compile import AsyncCompile  # inductor's loader, as its output code uses


# ---- the kernel, as inductor's output code defines it ------------------------------------------
try:
    async_compile = AsyncCompile()
    cpp_fused_relu_3 = async_compile.cpp_pybinding(['float*'], r'''
    #include <torch/csrc/inductor/cpp_prefix.h>
    extern "C"  void  kernel(float* in_out_ptr0)
    {
        std::atomic<int> inductor_cpu_integer_div_error{0};
        inductor_cpu_integer_div_error_flag = &inductor_cpu_integer_div_error;
        {
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(256L); x0+=static_cast<int64_t>(16L))
            {
                {
                    if(C10_LIKELY(x0 >= static_cast<int64_t>(0) && x0 < static_cast<int64_t>(256L)))
                    {
                        auto tmp0 = at::vec::Vectorized<float>::loadu(in_out_ptr0 + static_cast<int64_t>(x0), static_cast<int64_t>(16));
                        auto tmp1 = compile error!;
                        tmp1.store(in_out_ptr0 + static_cast<int64_t>(x0));
                    }
                }
            }
        }
        inductor_cpu_integer_div_error_flag = nullptr;
        inductor_cpu_throw_if_integer_div_error(inductor_cpu_integer_div_error);
    }
    ''')
    async_compile.wait(globals())
except Exception as e:  # the failing run's own exception, said in one line too
    print(f"fxlens-signature: raise: {type(e).__name__}", file=sys.stderr)
    raise
print("ok: the kernel compiles")
