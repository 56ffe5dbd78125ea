# expect: exit 1, fxlens-signature: accuracy: fxk_forward_0_erf_relu_add output 0 (aten.add.Tensor)
"""fxlens kernel reproducer: fxk_forward_0_erf_relu_add (aten.erf.default, aten.relu.default, aten.add.Tensor)

kernel    fxk_forward_0_erf_relu_add: 3 ATen op(s) fused, launched over 1 x 1 elements
graph     forward graph of compile 0/0 (backend fxlens)
user line File "/work/wt/i35/toolkit/examples/demo_failing.py", line 20, in forward: h = torch.erf(self.a(x))  # line 21: the op whose kernel the injected fault corrupts
failure   in the script's run: accuracy: output 0 (aten.add.Tensor) max abs err 1 at element (5, 6): kernel 2.8240766525268555, eager fp64 1.824076509770193
launch    grid (1,), XBLOCK 1, RBLOCK 1, xnumel 1, rnumel 1; values read: [1, 1], [1, 1]
inputs    the .pt file of the same name beside this script (torch.load(weights_only=True))
versions  torch 2.13.0+cpu, triton 3.9.0, python 3.11.7, fxlens 0.1.0
made by   FXLENS_INJECT=accuracy:aten.erf fxlens minify --kernel toolkit/examples/demo_failing.py

Run: python THIS_FILE (CPU: Triton's interpreter; CUDA when present: compiled). Exit 1 with the
largest error against eager in float64, its element and the op; or the launch's own exception;
exit 0 when the kernel agrees with eager. Imports torch and triton only.
note: shrunk from a launch over 128 x 1 elements (values read: [8, 16], [8, 16]) to the first elements of each input, the smallest cut that still fails (1 cuts compiled and launched); fxlens bakes sizes into its kernels, so this kernel is the one fxlens generates for the cut sizes (original kernel fxk_forward_0_erf_relu_add: /tmp/fxlens_0/kernels/fxk_e61ad53996187b51e03d.py)
"""


import os
import operator  # noqa: F401 - reference() may call operator.getitem
import sys
from pathlib import Path

import torch

DEV = "cuda" if torch.cuda.is_available() else "cpu"
if DEV == "cpu":  # no CPU driver: Triton's interpreter, which must be chosen before triton loads
    os.environ["TRITON_INTERPRET"] = "1"

import triton  # noqa: E402
import triton.language as tl  # noqa: E402, F401

# ---- the kernel, as fxlens generated it --------------------------------------------------------
@triton.jit
def fxk_forward_0_erf_relu_add(p_arg0, p_arg1, p_buf0, xnumel, rnumel, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
    xmask = xindex < xnumel
    t0 = tl.load(p_arg0 + (0 + 0 * xindex), xmask, other=0)
    t1 = tl.math.erf(t0)
    t2 = tl.maximum(t1, 0, propagate_nan=tl.PropagateNan.ALL)
    t3 = tl.load(p_arg1 + (0 + 0 * xindex), xmask, other=0)
    t4 = t2 + t3
    t5 = t4 + 1.0
    tl.store(p_buf0 + (0 + 0 * xindex), t5, xmask)

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
    in0 = _f64(p[0].as_strided((1, 1), (16, 1), p[0].storage_offset() + 0))
    in1 = _f64(p[1].as_strided((1, 1), (16, 1), p[1].storage_offset() + 0))
    v_erf = torch.ops.aten.erf.default(*_f64((in0,)), **_f64({}))  # FX node erf
    v_relu = torch.ops.aten.relu.default(*_f64((v_erf,)), **_f64({}))  # FX node relu
    v_add = torch.ops.aten.add.Tensor(*_f64((v_relu, in1)), **_f64({}))  # FX node add
    return [v_add]

KERNEL_NAME = 'fxk_forward_0_erf_relu_add'
OUTPUTS = [(2, (1, 1), (1, 1), 0, 'aten.add.Tensor')]  # (parameter, shape, stride, offset, op) of each value it writes


LAUNCH = {'xnumel': 1, 'rnumel': 1, 'XBLOCK': 1, 'RBLOCK': 1}
SIZES = []  # size arguments (symbolic sizes at this launch)


def launch(params):
    """One launch, as fxlens's wrapper does it: the buffers, the size arguments, the numels."""
    xblock, rblock = LAUNCH["XBLOCK"], LAUNCH["RBLOCK"]
    if DEV == "cuda":  # the CPU interpreter's blocks can be too big for a GPU: any size is correct
        xblock = max(1, min(xblock, 4096 // rblock))
    grid = ((LAUNCH["xnumel"] + xblock - 1) // xblock,)
    fxk_forward_0_erf_relu_add[grid](*params, *SIZES, LAUNCH["xnumel"], LAUNCH["rnumel"], XBLOCK=xblock, RBLOCK=rblock)


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
