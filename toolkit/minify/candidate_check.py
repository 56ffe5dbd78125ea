"""The check every minify candidate and every reproducer runs: imports only torch and the stdlib.

The source of this module (below the marker line) is embedded verbatim into each reproducer, so a
candidate evaluated by a minify worker and the reproducer the user attaches to a bug report decide
"does it still fail, and how" with the very same code.

Failure signature: a crash is `ExceptionType: first message line`, normalised by SIGNATURE_RULES so
addresses, temp paths, node names and numbers (sizes shrink during reduction) never make two runs
of the same bug look different. An accuracy failure is `AccuracyError: ...` under the rule in
`accuracy_failure`. A candidate that already fails in eager gets an `eager: ...` signature, which
never matches a backend's signature, so the reduction never drifts into a broken graph.

The accuracy rule itself (`accuracy_failure`, ACCURACY_*) lives in `fxlens.capture.accuracy`, which
`fxlens bisect` uses too; a reproducer embeds that module's body right before this module's part
(`fxlens.minify.repro_writer.check_source`), so both run the one rule.

Two more checks compare with eager rather than fp64: `raise` (eager raises on these inputs, which
is the point of the report: the candidate fails when the compiled call returns a value, raises
something else, or kills the process; `NoRaise: eager raises ...`), and `eager-diff` (the compiled
output differs from eager's by more than torch.testing.assert_close's default tolerance for the
dtype: what a script comparing with eager checks, when no fp64 rule would call it wrong).
"""

# --- embedded in reproducers from here on ---
import contextlib
import math
import sys

import torch

from fxlens.capture.accuracy import accuracy_failure, flat_tensors, normalise_message

# Dynamo wrappers whose cause is the real error (the backend's own exception)
WRAPPER_TYPES = ("BackendCompilerFailed", "InternalTorchDynamoError", "TorchRuntimeError")

# accuracy_failure, flat_tensors, normalise_message (and the ACCURACY_* and SIGNATURE_RULES they
# read): fxlens.capture.accuracy, whose body the reproducer writer embeds just before this part
# (bisect compares failures with the same rules)


# lines main() prints before the signature: what eager did, what the compiled call did, the
# largest error (filled by run_check; the reduction's workers ignore them)
REPORT = []
# the autocast the original call ran under ("cpu:bfloat16"; "" for none), set by run_check: each
# forward runs inside it, each backward after it, as a script's `with torch.autocast(...)` block
# and its `loss.backward()` after the block
AUTOCAST_NOW = [""]
# whether the caller mutates the outputs in place after the call (set by run_check): a failure the
# script hit after the graph returned, e.g. on an output that is a view (`y = f(x); y.mul_(2)`)
MUTATE_NOW = [False]


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


def _autocast():
    if not AUTOCAST_NOW[0]:
        return contextlib.nullcontext()
    device, dtype = AUTOCAST_NOW[0].split(":")
    return torch.autocast(device, dtype=getattr(torch, dtype))


def run_model(model, inputs, backward):
    with _autocast():
        out = model(*inputs)
    if MUTATE_NOW[0]:  # the caller's in-place use of what the graph returned
        for o in flat_tensors(out):
            if o.is_floating_point():
                o.mul_(1)
    if not backward:
        return out
    outs = [o for o in flat_tensors(out) if o.requires_grad]
    if outs:
        torch.autograd.backward([o.float().sum() for o in outs])
    grads = [x.grad for x in inputs if isinstance(x, torch.Tensor) and x.requires_grad and x.is_leaf]
    return [*flat_tensors(out), *[g for g in grads if g is not None]]


def _to64(x):
    if isinstance(x, torch.Tensor) and x.is_floating_point():
        return x.detach().double().requires_grad_(x.requires_grad)
    return x


def run_check(
    model_cls,
    make_inputs,
    backend,
    check="crash",
    backward=False,
    dynamic=False,
    reference="",
    autocast="",
    mutate=False,
):
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
        autocast: "device:dtype" of the autocast the original call ran under ("" for none).
        mutate: the caller mutates the outputs in place after the call (`o.mul_(1)` on each).
    """
    del REPORT[:]
    AUTOCAST_NOW[0] = autocast
    MUTATE_NOW[0] = mutate
    try:
        ref_model = model_cls()
        if reference:
            ref_model = torch.compile(ref_model, backend=reference, dynamic=True if dynamic else None)
        eager = run_model(ref_model, make_inputs(), backward)
    except Exception as e:
        if check != "raise":
            return "eager: " + signature_of(e)
        return _compare_raise(model_cls, make_inputs, backend, backward, dynamic, e)
    if check == "raise":  # the inputs no longer make eager raise: not the reported behaviour
        return "eager: returns a value"
    try:
        model = torch.compile(model_cls(), backend=backend, dynamic=True if dynamic else None)
        compiled = run_model(model, make_inputs(), backward)
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
        out = run_model(model, make_inputs(), backward)
    except Exception as e:
        REPORT.append(
            f"compiled raises {type(e).__name__}: {str(e).strip().splitlines()[0] if str(e) else ''}"
        )
        sig = signature_of(e)
        return None if sig == expected else sig
    shown = [tuple(t.shape) for t in flat_tensors(out)]
    REPORT.append(f"compiled returns a value (tensors of shape {shown})")
    return f"NoRaise: eager raises {expected}, compiled returns a value"


def _ref64(model_cls, make_inputs, backward, eager):
    try:
        return run_model(model_cls(), [_to64(x) for x in make_inputs()], backward)
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
    ref64, eager, compiled = flat_tensors(ref64), flat_tensors(eager), flat_tensors(compiled)
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
    eager, compiled = flat_tensors(eager), flat_tensors(compiled)
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
            return eager_diff_failure(
                eager, compiled, _ref64(model_cls, make_inputs, False, eager), model_cls
            )
        return _accuracy(model_cls, make_inputs, False, eager, compiled) if check == "accuracy" else None


def rand_tensor(shape, stride, dtype, device, requires_grad, seed, lo=0, hi=2, value=None, leaf=True):
    """A deterministic input: `value` (a saved tensor, cut to `shape`) or seeded random numbers;
    `leaf` False: a non-leaf (a view of a leaf that requires grad), as the graph was given."""
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
    if not (t.is_floating_point() or t.is_complex()):
        return t
    t.requires_grad_(requires_grad)
    # a non-leaf (clone keeps dense strides) may be mutated in place under autograd, a leaf not
    return t.clone() if requires_grad and not leaf else t


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
    autocast="",
    mutate=False,
):
    """Reproducer entry point: exit 1 printing the signature when it fails, else exit 0. With
    `load_inner`, the graph is an ATen graph compiled by the backend's inner compiler."""
    if load_inner is not None:
        sig = run_aten_check(model_cls, make_inputs, load_inner(), check, dynamic)
    else:
        sig = run_check(
            model_cls, make_inputs, load_backend(), check, backward, dynamic, reference, autocast, mutate
        )
    for line in REPORT:  # what eager did, what the compiled call did, the largest error
        print(line, file=sys.stderr)
    if sig is None:
        print("did not reproduce: the compiled model ran and matched", file=sys.stderr)
        return 0
    print(f"fxlens-signature: {sig}", file=sys.stderr)
    if sig != expected:
        print(f"(minify recorded: {expected})", file=sys.stderr)
    return 1
