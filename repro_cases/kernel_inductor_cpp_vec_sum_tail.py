# expect: exit 1, fxlens-signature: accuracy: cpp_fused_add_div_mul_rsqrt_sum_0 output 0 (aten.rsqrt.default)
# corpus: slow (an inductor C++ compile)
# injected: the masked-tail lane count is one short because tests/minify/scripts/inductor_vec_sum.py
# (run with BUG=1) edits the C++ source inductor generated; inductor itself emits 4L there
"""fxlens kernel reproducer: cpp_fused_add_div_mul_rsqrt_sum_0 (aten.mul.Tensor, aten.sum.dim_IntList, aten.div.Tensor, aten.add.Tensor, aten.rsqrt.default)

kernel    cpp_fused_add_div_mul_rsqrt_sum_0: inductor C++ kernel of 5 post-grad node(s)
graph     inference graph of compile 0/0 (backend inductor)
user line File "/work/wt/i35/tests/minify/scripts/inductor_vec_sum.py", line 32, in rms: return torch.rsqrt((x * x).sum(dim=1) / x.shape[1] + 1e-6)
failure   in the script's run: accuracy: output 0 (aten.rsqrt.default) max abs err 0.251 at element (23,): kernel 1.1398892402648926, eager fp64 0.8884359052812452
launch    cpp_fused_add_div_mul_rsqrt_sum_0(buf1, arg0_1)  (tensors: [32], [32, 20])
inputs    the .pt file of the same name beside this script (torch.load(weights_only=True))
versions  torch 2.13.0+cpu, triton 3.9.0, python 3.11.7, fxlens 0.1.0, C++ compiled by inductor (torch._inductor.async_compile) on x86_64
made by   BUG=1 fxlens minify --kernel tests/minify/scripts/inductor_vec_sum.py

Run: python THIS_FILE (CPU: Triton's interpreter; CUDA when present: compiled). Exit 1 with the
largest error against eager in float64, its element and the op; or the launch's own exception;
exit 0 when the kernel agrees with eager. Imports torch and triton only.
note: not shrunk: inductor compiles a kernel for the launch's sizes, so a smaller launch is another inductor compile; run `fxlens minify` first and this on its reproducer for small inputs
"""


import operator
import sys
from pathlib import Path

import torch
from torch._inductor.async_compile import AsyncCompile  # inductor's loader, as its output code uses

DEV = "cpu"  # a C++ kernel: CPU tensors

# ---- the kernel, as inductor's output code defines it ------------------------------------------
async_compile = AsyncCompile()
cpp_fused_add_div_mul_rsqrt_sum_0 = async_compile.cpp_pybinding(['float*', 'const float*'], r'''
#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  kernel(float* in_out_ptr0,
                       const float* in_ptr0)
{
    std::atomic<int> inductor_cpu_integer_div_error{0};
    inductor_cpu_integer_div_error_flag = &inductor_cpu_integer_div_error;
    auto out_ptr0 = in_out_ptr0;
    {
        #pragma GCC ivdep
        for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(32L); x0+=static_cast<int64_t>(1L))
        {
            {
                float tmp_acc0 = 0;
                at::vec::Vectorized<float> tmp_acc0_vec = at::vec::Vectorized<float>(0);
                for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(20L); x1+=static_cast<int64_t>(16L))
                {
                    {
                        if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(16L)))
                        {
                            auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x1 + 20L*x0), static_cast<int64_t>(16));
                            auto tmp1 = tmp0 * tmp0;
                            tmp_acc0_vec = tmp_acc0_vec + tmp1;
                        }
                        if(C10_UNLIKELY(x1 >= static_cast<int64_t>(16L) && x1 < static_cast<int64_t>(20L)))
                        {
                            auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x1 + 20L*x0), static_cast<int64_t>(4L));
                            auto tmp1 = tmp0 * tmp0;
                            tmp_acc0_vec = sum_masked_reduce(tmp_acc0_vec, tmp1, static_cast<int64_t>(3L));
                        }
                    }
                }
                tmp_acc0 = tmp_acc0 + at::vec::vec_reduce_all<float, 1>([](at::vec::Vectorized<float>& x, at::vec::Vectorized<float>& y) { return x + y; }, tmp_acc0_vec);
                in_out_ptr0[static_cast<int64_t>(x0)] = static_cast<float>(tmp_acc0);
            }
        }
    }
    {
        for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(32L); x0+=static_cast<int64_t>(16L))
        {
            {
                if(C10_LIKELY(x0 >= static_cast<int64_t>(0) && x0 < static_cast<int64_t>(32L)))
                {
                    auto tmp0 = at::vec::Vectorized<float>::loadu(out_ptr0 + static_cast<int64_t>(x0), static_cast<int64_t>(16));
                    auto tmp1 = static_cast<float>(20.0);
                    auto tmp2 = at::vec::Vectorized<float>(tmp1);
                    auto tmp3 = tmp0 / tmp2;
                    auto tmp4 = static_cast<float>(1e-06);
                    auto tmp5 = at::vec::Vectorized<float>(tmp4);
                    auto tmp6 = tmp3 + tmp5;
                    auto tmp7 = tmp6.rsqrt();
                    tmp7.store(in_out_ptr0 + static_cast<int64_t>(x0));
                }
            }
        }
    }
    inductor_cpu_integer_div_error_flag = nullptr;
    inductor_cpu_throw_if_integer_div_error(inductor_cpu_integer_div_error);
}
''')
async_compile.wait(globals())
del async_compile

def _snap(t):
    """A copy of t with its whole storage (offset, strides and the elements between them)."""
    out = torch.empty(0, dtype=t.dtype, device=t.device)
    return out.set_(t.untyped_storage().clone(), t.storage_offset(), t.shape, t.stride())


def _on(t, dev):
    """t on device dev, with the same storage layout (a kernel indexes its storage directly)."""
    if not isinstance(t, torch.Tensor) or t.device.type == dev:
        return t
    n = t.untyped_storage().nbytes() // max(t.element_size(), 1)
    flat = torch.empty(0, dtype=t.dtype).set_(t.untyped_storage(), 0, (n,), (1,))
    return flat.to(dev).as_strided(t.shape, t.stride(), t.storage_offset())


def _f64(x):
    """Floating tensors in float64 (lists and dicts too): eager's reference precision."""
    if isinstance(x, torch.Tensor):
        return x.double() if x.is_floating_point() and x.dtype != torch.float64 else x
    if isinstance(x, (list, tuple)):
        return type(x)(_f64(v) for v in x)
    if isinstance(x, dict):
        return {k: _f64(v) for k, v in x.items()}
    return x


TOLERANCE = {torch.float16: 1e-2, torch.bfloat16: 5e-2}  # else 1e-4 (fp32/fp64), exact for integers


def compare(got, ref):
    """(ok, max abs error, its element as an index tuple, kernel value, reference value, tolerance).

    A value within tol + tol * |ref| of the fp64 reference passes; non-finite values must match."""
    ref = ref.reshape(got.shape) if ref.shape != got.shape else ref
    ref = ref.to(got.device)
    tol = TOLERANCE.get(got.dtype, 1e-4) if got.dtype.is_floating_point else 0.0
    if got.numel() == 0:
        return True, 0.0, (), None, None, tol
    g, r = got.double(), ref.double()
    err = (g - r).abs()
    finite = torch.isfinite(r) & torch.isfinite(g)
    same = (~finite) & ((g == r) | (g.isnan() & r.isnan()))
    err = torch.where(finite, err, torch.where(same, 0.0, float("inf")))
    bad = err > tol + tol * r.abs().nan_to_num(0)
    flat = int(torch.where(bad, err, -1.0).flatten().argmax()) if bool(bad.any()) else int(err.flatten().argmax())
    at = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), got.shape)) if got.dim() else ()
    return not bool(bad.any()), float(err.max()), at, g.flatten()[flat].item(), r.flatten()[flat].item(), tol

def reference(p, C):
    """Eager's computation of the kernel's ATen nodes, in float64."""
    in1 = _f64(p[1].as_strided((32, 20), (20, 1), p[1].storage_offset() + 0))
    v_mul = torch.ops.aten.mul.Tensor(*_f64((in1, in1)), **_f64({}))  # %mul : [num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%arg0_1, %arg0_1), kw
    v_sum_1 = torch.ops.aten.sum.dim_IntList(*_f64((v_mul, [1])), **_f64({}))  # %sum_1 : [num_users=1] = call_function[target=torch.ops.aten.sum.dim_IntList](args = (%mul, [1]), kw
    v_div = torch.ops.aten.div.Tensor(*_f64((v_sum_1, 20)), **_f64({}))  # %div : [num_users=1] = call_function[target=torch.ops.aten.div.Tensor](args = (%sum_1, 20), kwargs =
    v_add = torch.ops.aten.add.Tensor(*_f64((v_div, 1e-06)), **_f64({}))  # %add : [num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%div, 1e-06), kwargs 
    v_rsqrt = torch.ops.aten.rsqrt.default(*_f64((v_add,)), **_f64({}))  # %rsqrt : [num_users=1] = call_function[target=torch.ops.aten.rsqrt.default](args = (%add,), kwargs =
    return [v_rsqrt]

KERNEL_NAME = 'cpp_fused_add_div_mul_rsqrt_sum_0'
OUTPUTS = [(0, (32,), (1,), 0, 'aten.rsqrt.default')]  # (parameter, shape, stride, offset, op) of each value it writes

def launch(args):
    """The line of inductor's wrapper (its output code's `call`) that launches the kernel."""
    buf1, arg0_1, = args
    cpp_fused_add_div_mul_rsqrt_sum_0(buf1, arg0_1)


def main():
    saved = torch.load(Path(__file__).with_suffix(".pt"), weights_only=True)
    params = [_on(t, DEV) for t in saved["params"]]
    consts = [_on(t, DEV) for t in saved["consts"]]
    ref = reference([_snap(t) if isinstance(t, torch.Tensor) else t for t in params], consts)
    try:
        launch(params)
    except Exception as e:  # the failing run's own exception, said in one line too
        print(f"fxlens-signature: raise: {type(e).__name__}", file=sys.stderr)
        raise
    worst = None
    for i, ((pi, shape, stride, off, op), r) in enumerate(zip(OUTPUTS, ref)):
        got = params[pi].as_strided(shape, stride, params[pi].storage_offset() + off)
        ok, err, at, g, rv, tol = compare(got, r)
        print(f"output {i} ({op}, {got.dtype} {list(got.shape)}): max abs err {err:.3g}"
              f"{'' if ok else ' at element ' + str(at) + f': kernel {g!r}, eager fp64 {rv!r}'}")
        if not ok and worst is None:
            worst = (i, op, err, at, g, rv, tol)
    if worst is None:
        print(f"ok: {KERNEL_NAME} agrees with eager in float64")
        return 0
    i, op, err, at, g, rv, tol = worst
    print(f"FAIL: {KERNEL_NAME} output {i} ({op}): max abs err {err:.3g} at element {at}: "
          f"kernel {g!r}, eager fp64 {rv!r} (tolerance {tol:g} + {tol:g}*|eager|)", file=sys.stderr)
    print(f"fxlens-signature: accuracy: {KERNEL_NAME} output {i} ({op})", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
