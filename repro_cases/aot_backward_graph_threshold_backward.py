# fxlens minify reproducer: standalone, run it with `python THIS_FILE`.
# curated: backend inlined by hand so the case is standalone; kind: backward-only compile crash,
# reduced on the AOTAutograd backward graph (the inner bw_compiler called directly)
# source: /work/main/tests/minify/scripts/backward_fault.py
# created: 2026-12-02 15:45:51 UTC
# versions: torch 2.13.0+cpu, triton 3.9.0, fxlens 0.1.0
# backend: aot_autograd(bw_compiler fails on aten.threshold_backward), inlined below
# check: crash
# level: aot backward graph
# nodes: 149 original -> 1 final (3 queries)
# expect: exit 1, fxlens-signature: NotImplementedError: no lowering for aten.threshold_backward


import os
import sys

import torch
from math import inf, nan  # noqa: F401
from torch import device  # noqa: F401


class Repro(torch.nn.Module):
    def forward(self, arg0, arg1):
        threshold_backward = torch.ops.aten.threshold_backward.default(arg0, arg1, 0);  arg0 = arg1 = None
        return (threshold_backward,)


def make_inputs():
    return [
        rand_tensor((1, 1), (1, 1), torch.float32, 'cpu', False, seed=0),
        rand_tensor((1, 1), (1, 1), torch.float32, 'cpu', False, seed=1),
    ]


def load_backend():
    # inlined from the original script (tests/minify/scripts/backward_fault.py): an AOTAutograd
    # backend whose backward compiler has no lowering for ReLU's gradient
    from torch._dynamo.backends.common import aot_autograd

    def fw_compiler(gm, example_inputs):
        return gm

    def bw_compiler(gm, example_inputs):
        if any("threshold_backward" in str(n.target) for n in gm.graph.nodes):
            raise NotImplementedError("no lowering for aten.threshold_backward")
        return gm

    return aot_autograd(fw_compiler=fw_compiler, bw_compiler=bw_compiler)


# the failure lives in the AOTAutograd backward graph: compile it with the backend's
# inner ATen compiler, as the backend itself does
def load_inner(backend=None):
    kw = (backend or load_backend()).kwargs
    return next(kw[n] for n in ('bw_compiler', 'fw_compiler') if kw.get(n) is not None)


CHECK = 'crash'
BACKWARD = False
EXPECTED = 'NotImplementedError: no lowering for aten.threshold_backward'
DYNAMIC = False
LEVEL = 'backward'


# --- the check fxlens minify ran (fxlens.minify.candidate_check, embedded: torch only) ---
import math
import re
import sys

import torch

# (pattern, replacement): one rule a line, applied in order to the first line of a message
SIGNATURE_RULES = (
    (r"0x[0-9a-fA-F]+", "<addr>"),  # object addresses
    (r"(?:[A-Za-z]:)?(?:[\\/][\w.\-+@~]+){2,}", "<path>"),  # temp dirs, cache files, source paths
    # generated kernel names list the ops fused into them, which reduction changes
    (r"\b(?:fxk|triton_(?:poi|red|per|tem)|cpp_fused)_\w+", "<kernel>"),
    (r"\b([A-Za-z_][A-Za-z0-9_]*?)_\d+\b", r"\1"),  # fx node names: add_3 -> add
    (r"\d+(?:\.\d+)?(?:e[-+]?\d+)?", "N"),  # ids, sizes, counts: shapes shrink during reduction
    (r"\s+", " "),  # whitespace runs
)

# Dynamo wrappers whose cause is the real error (the backend's own exception)
WRAPPER_TYPES = ("BackendCompilerFailed", "InternalTorchDynamoError", "TorchRuntimeError")

#: accuracy rule, torch's `same()` with an fp64 reference: the compiled result fails when its RMSE
#: against an fp64 eager run exceeds ACCURACY_MULTIPLIER x the RMSE of the eager run in the
#: original dtype, plus ACCURACY_TOL / 10
ACCURACY_MULTIPLIER = 2.0
ACCURACY_TOL = 1e-4


def normalise_message(msg):
    """The first non-empty line of an error message, normalised by SIGNATURE_RULES."""
    line = next((ln.strip() for ln in str(msg).splitlines() if ln.strip()), "")
    for pattern, repl in SIGNATURE_RULES:
        line = re.sub(pattern, repl, line)
    return line.strip()[:200]


def signature_of(exc):
    """A stable one-line signature for an exception (wrappers from Dynamo unwrapped)."""
    seen = 0
    while type(exc).__name__ in WRAPPER_TYPES and seen < 5:
        inner = getattr(exc, "inner_exception", None) or exc.__cause__
        if inner is None:
            break
        exc, seen = inner, seen + 1
    msg = normalise_message(exc)
    return f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__


def _flat_tensors(out):
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in _flat_tensors(o)]
    if isinstance(out, dict):
        return [t for o in out.values() for t in _flat_tensors(o)]
    return []


def _rmse(a, b):
    return float(torch.sqrt(torch.mean((a.double() - b.double()) ** 2)))


def accuracy_failure(ref64, eager, compiled):
    """Why `compiled` diverges from the fp64 reference more than `eager` does, or None."""
    ref64, eager, compiled = _flat_tensors(ref64), _flat_tensors(eager), _flat_tensors(compiled)
    if len(compiled) != len(eager):
        return "AccuracyError: compiled returns a different number of tensors"
    for r, e, c in zip(ref64, eager, compiled):
        if tuple(c.shape) != tuple(e.shape):
            return "AccuracyError: compiled output has a different shape"
        if not (c.is_floating_point() or c.is_complex()):
            if not torch.equal(c.cpu(), e.cpu()):
                return "AccuracyError: compiled integer output differs from eager"
            continue
        if c.numel() == 0:
            continue
        r, e, c = r.detach().cpu(), e.detach().cpu(), c.detach().cpu()
        if bool(torch.isfinite(r).all()) and not bool(torch.isfinite(c).all()):
            return "AccuracyError: compiled output has NaN/inf where the fp64 reference has none"
        finite = torch.isfinite(r) & torch.isfinite(c)
        if not bool(finite.any()):
            continue
        ref_err = _rmse(r[finite], e[finite]) if bool(torch.isfinite(e[finite]).all()) else 0.0
        res_err = _rmse(r[finite], c[finite])
        if not math.isfinite(res_err) or res_err > ACCURACY_MULTIPLIER * ref_err + ACCURACY_TOL / 10:
            return "AccuracyError: compiled output diverges from the fp64 reference"
    return None


def _run(model, inputs, backward):
    out = model(*inputs)
    if not backward:
        return out
    outs = [o for o in _flat_tensors(out) if o.requires_grad]
    if outs:
        torch.autograd.backward([o.float().sum() for o in outs])
    grads = [x.grad for x in inputs if isinstance(x, torch.Tensor) and x.requires_grad]
    return [*_flat_tensors(out), *[g for g in grads if g is not None]]


def _to64(x):
    if isinstance(x, torch.Tensor) and x.is_floating_point():
        return x.detach().double().requires_grad_(x.requires_grad)
    return x


def run_check(model_cls, make_inputs, backend, check="crash", backward=False, dynamic=False):
    """Run the model eagerly, then compiled with `backend`; the failure's signature, or None.

    Args:
        model_cls: the nn.Module class to instantiate (no constructor arguments).
        make_inputs: returns a fresh list of inputs (deterministic) on each call.
        backend: what `torch.compile(backend=...)` accepts.
        check: "crash" (only exceptions count) or "accuracy" (also divergence from fp64).
        backward: also run backward through every output that requires grad.
        dynamic: compile with dynamic=True (symbolic shapes), as the original script did.
    """
    try:
        eager = _run(model_cls(), make_inputs(), backward)
    except Exception as e:
        return "eager: " + signature_of(e)
    try:
        model = torch.compile(model_cls(), backend=backend, dynamic=True if dynamic else None)
        compiled = _run(model, make_inputs(), backward)
    except Exception as e:
        return signature_of(e)
    return _accuracy(model_cls, make_inputs, backward, eager, compiled) if check == "accuracy" else None


def _accuracy(model_cls, make_inputs, backward, eager, compiled):
    try:
        ref64 = _run(model_cls(), [_to64(x) for x in make_inputs()], backward)
    except Exception:
        ref64 = eager  # a graph that cannot run in fp64: compare with eager as is
    return accuracy_failure(ref64, eager, compiled)


def run_aten_check(model_cls, make_inputs, compiler, check="crash", dynamic=False):
    """An ATen-level (AOTAutograd forward or backward) graph: trace it with make_fx as torch's own
    repro scripts do, hand it to the backend's inner ATen compiler directly, run the result."""
    from torch.fx.experimental.proxy_tensor import make_fx

    with torch.no_grad():
        try:
            eager = model_cls()(*make_inputs())
            inputs = make_inputs()
            gm = make_fx(model_cls(), tracing_mode="symbolic" if dynamic else "real")(*inputs)
        except Exception as e:
            return "eager: " + signature_of(e)
        try:
            fn = compiler(gm, inputs)
            boxed = getattr(fn, "_boxed_call", False)
            compiled = fn(list(make_inputs())) if boxed else fn(*make_inputs())
        except Exception as e:
            return signature_of(e)
        return _accuracy(model_cls, make_inputs, False, eager, compiled) if check == "accuracy" else None


def rand_tensor(shape, stride, dtype, device, requires_grad, seed, lo=0, hi=2, value=None):
    """A deterministic input: `value` (a saved tensor, cut to `shape`) or seeded random numbers."""
    if value is not None:
        t = value[tuple(slice(0, s) for s in shape)] if value.dim() == len(shape) else value
        t = t.to(device=device, dtype=dtype)
    else:
        gen = torch.Generator().manual_seed(seed)
        if dtype == torch.bool:
            t = torch.randint(0, 2, shape, generator=gen).bool()
        elif dtype.is_floating_point or dtype.is_complex:
            t = torch.randn(shape, generator=gen, dtype=torch.float32).to(dtype)
        else:
            t = torch.randint(int(lo), int(hi) + 1, shape, generator=gen).to(dtype)
        t = t.to(device)
    if tuple(stride) != tuple(t.contiguous().stride()) and len(stride) == len(shape):
        size = 1 + sum((s - 1) * st for s, st in zip(shape, stride) if s > 0)
        base = torch.zeros(max(size, 1), dtype=t.dtype, device=t.device)
        out = base.as_strided(shape, stride)
        out.copy_(t)
        t = out
    else:
        t = t.contiguous().clone()
    return t.requires_grad_(requires_grad) if (t.is_floating_point() or t.is_complex()) else t


def main(model_cls, make_inputs, load_backend, check, backward, expected, dynamic=False, load_inner=None):
    """Reproducer entry point: exit 1 printing the signature when it fails, else exit 0. With
    `load_inner`, the graph is an ATen graph compiled by the backend's inner compiler."""
    if load_inner is not None:
        sig = run_aten_check(model_cls, make_inputs, load_inner(), check, dynamic)
    else:
        sig = run_check(model_cls, make_inputs, load_backend(), check, backward, dynamic)
    if sig is None:
        print("did not reproduce: the compiled model ran and matched", file=sys.stderr)
        return 0
    print(f"fxlens-signature: {sig}", file=sys.stderr)
    if sig != expected:
        print(f"(minify recorded: {expected})", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(Repro, make_inputs, load_backend, CHECK, BACKWARD, EXPECTED, DYNAMIC, load_inner))
