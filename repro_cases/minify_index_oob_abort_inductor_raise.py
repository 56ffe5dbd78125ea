# fxlens minify reproducer: standalone, run it with `python THIS_FILE`.
# source: tests/reports/scripts/index_oob_abort.py
# created: 2026-12-04 11:53:26 UTC
# versions: torch 2.13.0+cpu, triton 3.9.0, fxlens 0.1.0
# backend: inductor
# check: raise
# level: dynamo graph
# nodes: 2 original -> 1 final (6 queries)
# expect: killed by SIGABRT
# corpus: slow


import os
import sys

import torch
from math import inf, nan  # noqa: F401
from torch import device  # noqa: F401


class Repro(torch.nn.Module):
    def forward(self, arg0, arg1):
        getitem = arg1[arg0];  arg1 = arg0 = None
        return (getitem,)


def make_inputs():
    return [
        rand_tensor((1, 1), (1, 1), torch.int64, 'cpu', False, seed=0, lo=1, hi=1),
        rand_tensor((1, 4, 33, 33), (4356, 1089, 33, 1), torch.float32, 'cpu', False, seed=1),
    ]


def load_backend():
    return 'inductor'


CHECK = 'raise'
BACKWARD = False
EXPECTED = 'killed by SIGABRT'
DYNAMIC = False
LEVEL = 'dynamo'


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
#: original dtype, plus ACCURACY_TOL / 10 x min(1, the reference's RMS). torch's floor is an absolute
#: ACCURACY_TOL / 10, which hides any error in outputs smaller than ~1e-5 (erf(1e-8) computed as 0,
#: pytorch/pytorch#198183); scaled down to the output's size it still sits 100x above fp32 rounding,
#: and it is never looser than torch's
ACCURACY_MULTIPLIER = 2.0
ACCURACY_TOL = 1e-4


# lines main() prints before the signature: what eager did, what the compiled call did, the
# largest error (filled by run_check; the reduction's workers ignore them)
REPORT = []


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
        scale = float(torch.sqrt(torch.mean(r[finite].abs().double() ** 2)))  # the reference's RMS
        floor = ACCURACY_TOL / 10 * min(scale, 1.0) if scale > 0 else torch.finfo(torch.float64).tiny
        if not math.isfinite(res_err) or res_err > ACCURACY_MULTIPLIER * ref_err + floor:
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


def run_check(model_cls, make_inputs, backend, check="crash", backward=False, dynamic=False, reference=""):
    """Run the model eagerly (or compiled with `reference`), then with `backend`; the failure's
    signature, or None.

    Args:
        model_cls: the nn.Module class to instantiate (no constructor arguments).
        make_inputs: returns a fresh list of inputs (deterministic) on each call.
        backend: what `torch.compile(backend=...)` accepts.
        check: "crash" (only exceptions count), "accuracy" (also divergence from fp64), "raise"
            (eager raises; the compiled call must raise the same) or "eager-diff" (outputs beyond
            assert_close's default tolerance of eager's).
        backward: also run backward through every output that requires grad.
        dynamic: compile with dynamic=True (symbolic shapes), as the original script did.
        reference: the backend the original script compared against (`eager`, `aot_eager`), as
            bug reports do: `torch.compile(m, backend=reference)` is the side compared with.
    """
    del REPORT[:]
    try:
        ref_model = model_cls()
        if reference:
            ref_model = torch.compile(ref_model, backend=reference, dynamic=True if dynamic else None)
        eager = _run(ref_model, make_inputs(), backward)
    except Exception as e:
        if check != "raise":
            return "eager: " + signature_of(e)
        return _compare_raise(model_cls, make_inputs, backend, backward, dynamic, e)
    if check == "raise":  # the inputs no longer make eager raise: not the reported behaviour
        return "eager: returns a value"
    try:
        model = torch.compile(model_cls(), backend=backend, dynamic=True if dynamic else None)
        compiled = _run(model, make_inputs(), backward)
    except Exception as e:
        return signature_of(e)
    if check == "eager-diff":
        return eager_diff_failure(eager, compiled, _ref64(model_cls, make_inputs, backward, eager), model_cls)
    return _accuracy(model_cls, make_inputs, backward, eager, compiled) if check == "accuracy" else None


def _compare_raise(model_cls, make_inputs, backend, backward, dynamic, eager_exc):
    """Check "raise": eager raised `eager_exc`; the compiled call must raise the same."""
    expected = signature_of(eager_exc)
    # printed at once, not kept in REPORT: a compiled call that aborts the process ends it here
    text = str(eager_exc).strip().splitlines()
    print(f"eager raises {type(eager_exc).__name__}: {text[0] if text else ''}", file=sys.stderr, flush=True)
    try:
        model = torch.compile(model_cls(), backend=backend, dynamic=True if dynamic else None)
        out = _run(model, make_inputs(), backward)
    except Exception as e:
        REPORT.append(f"compiled raises {type(e).__name__}: {str(e).strip().splitlines()[0] if str(e) else ''}")
        sig = signature_of(e)
        return None if sig == expected else sig
    shown = [tuple(t.shape) for t in _flat_tensors(out)]
    REPORT.append(f"compiled returns a value (tensors of shape {shown})")
    return f"NoRaise: eager raises {expected}, compiled returns a value"


def _ref64(model_cls, make_inputs, backward, eager):
    try:
        return _run(model_cls(), [_to64(x) for x in make_inputs()], backward)
    except Exception:
        return eager


def _largest(a, b):
    """(max |a - b|, flat index of it) over two same-shape tensors, NaN-aware."""
    d = (a.detach().cpu().double() - b.detach().cpu().double()).abs()
    d = torch.where(torch.isnan(d), torch.full_like(d, math.inf), d)
    i = int(d.flatten().argmax()) if d.numel() else 0
    return (float(d.flatten()[i]) if d.numel() else 0.0), i


def _element(shape, i):
    """The multi-index of flat index i in `shape`, as `[1, 2, 3]`."""
    idx = []
    for size in reversed(shape):
        idx.append(i % size if size else 0)
        i = i // size if size else 0
    return list(reversed(idx))


def _output_op(model_cls, k):
    """The op that computes output k of the model's forward (its FX target), or "" (best effort)."""
    try:
        gm = torch.fx.symbolic_trace(model_cls())
        out = next(n for n in gm.graph.nodes if n.op == "output")
        leaves = [a for a in torch.utils._pytree.tree_leaves(out.args[0]) if isinstance(a, torch.fx.Node)]
        t = leaves[k].target
        return t if isinstance(t, str) else getattr(t, "__name__", str(t))
    except Exception:
        return ""


def describe_worst(ref64, eager, compiled, model_cls=None):
    """REPORT lines: the largest error of the compiled outputs against fp64 (and eager's there)."""
    ref64, eager, compiled = _flat_tensors(ref64), _flat_tensors(eager), _flat_tensors(compiled)
    worst = None
    for k, (r, e, c) in enumerate(zip(ref64, eager, compiled)):
        if c.shape != r.shape or not c.is_floating_point() or not c.numel():
            continue
        err, i = _largest(c, r)
        if worst is None or err > worst[0]:
            worst = (err, k, i, r, e, c)
    if worst is None:
        return
    _, k, i, r, e, c = worst
    at = _element(tuple(c.shape), i)
    rv, ev, cv = (float(t.detach().flatten()[i]) for t in (r, e, c))
    op = _output_op(model_cls, k) if model_cls is not None else ""
    REPORT.append(
        f"largest error: output {k}{f' ({op})' if op else ''} element {at} "
        f"({str(c.dtype).removeprefix('torch.')}): compiled {cv!r}, "
        f"eager {ev!r}, fp64 {rv!r}; |compiled - fp64| = {abs(cv - rv):.3g}, |eager - fp64| = {abs(ev - rv):.3g}"
    )


def eager_diff_failure(eager, compiled, ref64=None, model_cls=None):
    """Why `compiled` differs from `eager` beyond assert_close's default tolerance, or None."""
    eager, compiled = _flat_tensors(eager), _flat_tensors(compiled)
    if len(compiled) != len(eager):
        return "EagerDiff: compiled returns a different number of tensors"
    for e, c in zip(eager, compiled):
        try:
            torch.testing.assert_close(c.detach().cpu(), e.detach().cpu(), equal_nan=True)
        except AssertionError:
            if ref64 is not None:
                describe_worst(ref64, eager, compiled, model_cls)
            return "EagerDiff: compiled output differs from eager beyond assert_close's default tolerance"
    return None


def _accuracy(model_cls, make_inputs, backward, eager, compiled):
    ref64 = _ref64(model_cls, make_inputs, backward, eager)  # eager itself when fp64 can't run
    why = accuracy_failure(ref64, eager, compiled)
    if why:
        describe_worst(ref64, eager, compiled, model_cls)
    return why


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
        if check == "eager-diff":
            return eager_diff_failure(eager, compiled, _ref64(model_cls, make_inputs, False, eager), model_cls)
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


def main(
    model_cls,
    make_inputs,
    load_backend,
    check,
    backward,
    expected,
    dynamic=False,
    load_inner=None,
    reference="",
):
    """Reproducer entry point: exit 1 printing the signature when it fails, else exit 0. With
    `load_inner`, the graph is an ATen graph compiled by the backend's inner compiler."""
    if load_inner is not None:
        sig = run_aten_check(model_cls, make_inputs, load_inner(), check, dynamic)
    else:
        sig = run_check(model_cls, make_inputs, load_backend(), check, backward, dynamic, reference)
    for line in REPORT:  # what eager did, what the compiled call did, the largest error
        print(line, file=sys.stderr)
    if sig is None:
        print("did not reproduce: the compiled model ran and matched", file=sys.stderr)
        return 0
    print(f"fxlens-signature: {sig}", file=sys.stderr)
    if sig != expected:
        print(f"(minify recorded: {expected})", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(Repro, make_inputs, load_backend, CHECK, BACKWARD, EXPECTED, DYNAMIC))
