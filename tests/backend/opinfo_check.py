"""Runs one OpInfo (one dtype, forward or backward) through `backend="fxlens"` and compares with eager.

The model is inductor's own OpInfo test (torch/test/inductor/test_torchinductor_opinfo.py): for each
sample input, the same call runs eagerly and compiled, and the results are compared at the OpInfo's
tolerances; backward compares the input gradients for the same (seeded) output cotangents. What this
module adds is the classification the coverage work needs: each (op, dtype) is `kernel` (fxlens
generated Triton for all of it), `fallback` (at least one ATen call ran between kernels: not a
failure), `xfail` (listed in opinfo_xfail.XFAIL with its reason), or a failure (`crash`, `wrong`).

Importable: `op_status(opinfo, dtype)` and `check_op(opinfo, dtype, mode)` are what the coverage
engineer's scripts reuse to measure the fallback share.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import os
import time
import unittest.mock
import warnings

import torch
from opinfo_xfail import NONDETERMINISTIC, xfail_reason
from torch.utils._pytree import tree_flatten

# torch.testing.assert_close's defaults per dtype (what OpInfo tests use when no override applies)
DEFAULT_TOL = {
    torch.float16: (1e-5, 1e-3),
    torch.bfloat16: (1e-5, 1.6e-2),
    torch.float32: (1e-5, 1.3e-6),
    torch.float64: (1e-7, 1e-7),
}
LOW_PRECISION = (torch.float16, torch.bfloat16)
# the dtypes the sweep runs: float32 plus the low-precision, integer and bool dtypes an OpInfo lists
# (int16 left out: its kernels are int32's and int8's; Dynamo's ~0.2 s per compile is the budget,
# and test_opinfo.sweep_items runs one low-precision and one integer/bool dtype per op)
SWEEP_DTYPES = (
    torch.float32,
    torch.float16,
    torch.bfloat16,
    torch.int64,
    torch.int32,
    torch.int8,
    torch.uint8,
    torch.bool,
)
# samples per (op, dtype, mode) in the slow sweep, picked so that the 0-d, empty, non-contiguous,
# broadcast and kwargs samples are in (see _samples); every sample of every dtype would take hours
SWEEP_LIMITS = {("forward", torch.float32): 3, ("backward", torch.float32): 2}
OTHER_DTYPE_LIMIT = 1
# ops whose result is a dtype conversion: compared bit-exactly, whatever the float dtype
CASTS = {"bfloat16", "half", "float", "double", "int", "long", "short", "byte", "char", "bool", "to",
         "type_as", "_refs.to"}  # fmt: skip


@dataclasses.dataclass
class Result:
    """What one (op, dtype, mode) did over its samples."""

    op: str
    dtype: torch.dtype
    mode: str  # "forward" | "backward"
    samples: int = 0  # compared samples
    skipped: int = 0  # samples eager itself rejects
    kernels: int = 0
    graphs: int = 0
    fallbacks: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    failure: str | None = None  # "crash: ..." or "wrong: ..." (the first one)
    xfail: str | None = None
    seconds: float = 0.0

    @property
    def status(self) -> str:
        """kernel | fallback | xfail | crash | wrong | skip | xpass."""
        if self.failure is not None:
            return "xfail" if self.xfail else self.failure.split(":")[0]
        if self.xfail:
            return "xpass"
        if self.samples == 0:
            return "skip"
        return "fallback" if self.fallbacks else "kernel"


def opinfo_id(op) -> str:
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def sweep_dtypes(op) -> list[torch.dtype]:
    supported = op.supported_dtypes("cpu")
    return [d for d in SWEEP_DTYPES if d in supported]


def tolerances(op, dtype) -> tuple[float, float]:
    """(atol, rtol) for a float result: the largest of assert_close's defaults and the OpInfo's own
    CPU `toleranceOverride`s (whichever test they were written for: the loosest the op's authors
    accept). Casts and integer/bool results are compared exactly elsewhere."""
    atol, rtol = DEFAULT_TOL.get(dtype, (1e-5, 1.3e-6))
    for info in getattr(op, "decorators", ()) or ():
        if getattr(info, "device_type", None) not in (None, "cpu"):
            continue
        if getattr(info, "dtypes", None) is not None and dtype not in info.dtypes:
            continue
        for dec in getattr(info, "decorators", ()) or ():
            tol = getattr(dec, "d", None)
            t = tol.get(dtype) if isinstance(tol, dict) else None
            if hasattr(t, "atol") and hasattr(t, "rtol"):
                atol, rtol = max(atol, t.atol), max(rtol, t.rtol)
    return atol, rtol


def _samples(op, dtype, requires_grad, limit):
    """The op's sample inputs for `dtype`: all of them, or `limit` picked deterministically so that
    each kind the generator makes (0-d, empty, non-contiguous, broadcast, with kwargs) is in."""
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        samples = list(op.sample_inputs("cpu", dtype, requires_grad=requires_grad))
    if limit is None or len(samples) <= limit:
        return samples
    picked, seen = [], set()
    for i, s in enumerate(samples):  # first the sample that adds a kind not seen yet
        kinds = _kinds(s)
        if kinds - seen:
            picked.append(i)
            seen |= kinds
        if len(picked) == limit:
            break
    rest = [i for i in range(len(samples)) if i not in picked]
    return [samples[i] for i in sorted(picked + rest[: limit - len(picked)])]


def _kinds(sample) -> set[str]:
    flat = [
        t for t in tree_flatten((sample.input, sample.args, sample.kwargs))[0] if isinstance(t, torch.Tensor)
    ]
    kinds = {"plain"} if all(t.layout == torch.strided for t in flat) else {"sparse"}
    flat = [t for t in flat if t.layout == torch.strided]
    if any(t.dim() == 0 for t in flat):
        kinds.add("0-d")
    if any(t.numel() == 0 for t in flat):
        kinds.add("empty")
    if any(not t.is_contiguous() for t in flat):
        kinds.add("non-contiguous")
    if len({tuple(t.shape) for t in flat}) > 1:
        kinds.add("broadcast")
    if sample.kwargs:
        kinds.add("kwargs")
    return kinds


def _clone(sample):
    """A copy of the sample whose tensors keep their sizes and strides (non-contiguous stays so) and
    own their storage, so an in-place op in one run cannot change the other run's inputs."""

    def one(t):
        if not isinstance(t, torch.Tensor):
            return t
        if t.layout != torch.strided:
            c = t.detach().clone()
        elif t.numel() > 1 and 0 in t.stride():  # expanded: copying would need the overlap
            c = t.detach()
        else:
            c = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype)
            c.copy_(t.detach())
        return c.requires_grad_(t.requires_grad)

    return sample.transform(one)


# ops whose index output torch leaves unspecified among equal values (topk, sort without
# stable=True, kthvalue, median, mode): any index that points at an equal value is right
TIE_ORDER = {"topk": 1, "kthvalue": 1, "sort": 0, "argsort": 0, "median": 0, "nanmedian": 0, "mode": 0}


def _ties_only(op, sample, i: int, a, e) -> bool:
    """True when index output `i` differs from eager's only in which of several equal input values
    it points at (both index tensors gathered from the input along the op's dim agree)."""
    pos = TIE_ORDER.get(op.name)
    if sample is None or pos is None or a.is_floating_point() or (i == 0 and op.name != "argsort"):
        return False
    args, kwargs = sample.args, sample.kwargs
    if kwargs.get("stable") or (op.name in ("sort", "argsort") and len(args) > 2 and args[2]):
        return False  # a stable sort has one right answer
    dim = args[pos] if len(args) > pos and isinstance(args[pos], int) else kwargs.get("dim", -1)
    inp = sample.input
    if not isinstance(inp, torch.Tensor) or inp.dim() == 0 or not isinstance(dim, int):
        return False
    try:
        if a.dim() < inp.dim():  # keepdim=False dropped the reduced dim
            a, e = a.unsqueeze(dim), e.unsqueeze(dim)
        got, want = inp.detach().gather(dim, a), inp.detach().gather(dim, e)
    except (RuntimeError, IndexError):
        return False
    return bool(((got == want) | (got.isnan() & want.isnan())).all())


def _compare(op, dtype, actual, expected, exact: bool, what: str, reference=None, sample=None) -> str | None:
    """None when `actual` matches `expected`, else why not.

    A float result outside the tolerance still passes when it is as accurate as eager's: its
    largest error against `reference()` (the same call in fp64) is at most twice eager's plus atol,
    torch's own accuracy rule for compilers (`torch._dynamo.utils.same` with an fp64 reference):
    fp16/bf16 computed in fp32, or a sum in another order, is not a wrong number."""
    a_flat, _ = tree_flatten(actual)
    e_flat, _ = tree_flatten(expected)
    if len(a_flat) != len(e_flat):
        return f"{what}: {len(a_flat)} outputs, eager {len(e_flat)}"
    nondet = opinfo_id(op) in NONDETERMINISTIC or op.name in NONDETERMINISTIC
    for i, (a, e) in enumerate(zip(a_flat, e_flat, strict=True)):
        if not isinstance(e, torch.Tensor):
            if not nondet and a != e and not (a != a and e != e):  # NaN == NaN here
                return f"{what}[{i}]: {a!r}, eager {e!r}"
            continue
        if not isinstance(a, torch.Tensor):
            return f"{what}[{i}]: {type(a).__name__}, eager a tensor"
        if a.shape != e.shape or a.dtype != e.dtype:
            return f"{what}[{i}]: {tuple(a.shape)} {a.dtype}, eager {tuple(e.shape)} {e.dtype}"
        if nondet or e.layout != torch.strided:
            continue
        floating = e.is_floating_point() or e.is_complex()
        atol, rtol = tolerances(op, e.dtype) if floating and not exact else (0.0, 0.0)
        try:
            torch.testing.assert_close(a.detach(), e.detach(), atol=atol, rtol=rtol, equal_nan=True)
        except AssertionError as err:
            if floating and not exact and reference is not None and _as_accurate(a, e, reference, i, atol):
                continue
            if what == "out" and _ties_only(op, sample, i, a, e):
                continue
            msg = " ".join(str(err).split())[:300]
            return f"{what}[{i}] {tuple(e.shape)} {e.dtype}: {msg}"
    return None


def _as_accurate(a, e, reference, i, atol) -> bool:
    try:
        ref = tree_flatten(reference())[0][i]
    except Exception:  # noqa: BLE001 - no fp64 run: the tolerance alone decides
        return False
    if not isinstance(ref, torch.Tensor) or ref.shape != e.shape:
        return False
    r, a, e = ref.detach().double(), a.detach().double(), e.detach().double()
    ok = torch.isfinite(r) & torch.isfinite(e)
    if not bool((ok | (a == e) | (a.isnan() & e.isnan())).all()):
        return False  # where eager has NaN/inf (or fp64 does), the same NaN/inf is expected
    err_c = float((a - r).abs()[ok].max()) if bool(ok.any()) else 0.0
    err_e = float((e - r).abs()[ok].max()) if bool(ok.any()) else 0.0
    return err_c <= 2 * err_e + atol


def _grads(out, inputs, cotangents):
    outs = [o for o in tree_flatten(out)[0] if isinstance(o, torch.Tensor) and o.requires_grad]
    if not outs:
        return None
    leaves = [t for t in inputs if t.requires_grad]
    cts = cotangents(outs)
    return torch.autograd.grad(outs, leaves, cts, allow_unused=True)


def _reference(fn, sample, backward, cts):
    """The same call with every floating tensor in fp64 (lazily: only when a tolerance is missed)."""

    def run():
        def up(t):
            if isinstance(t, torch.Tensor) and t.is_floating_point():
                return t.detach().double().requires_grad_(t.requires_grad)
            return t

        s = sample.transform(up)
        out = _call(fn, s)
        if not backward:
            return out
        ups = lambda outs: [c.double() for c in cts([o.to(_orig(o, sample)) for o in outs])]  # noqa: E731
        return (out, _grads(out, _leaves(s), ups))

    return run


def _orig(o, sample):
    """The dtype the eager run had for an fp64 output (the sample's floating dtype)."""
    flat = [
        t for t in tree_flatten((sample.input, sample.args, sample.kwargs))[0] if isinstance(t, torch.Tensor)
    ]
    floats = [t.dtype for t in flat if t.is_floating_point()]
    return floats[0] if floats and o.is_floating_point() else o.dtype


def _leaves(sample):
    flat, _ = tree_flatten((sample.input, sample.args, sample.kwargs))
    return [t for t in flat if isinstance(t, torch.Tensor) and t.requires_grad]


def _call(fn, sample):
    return fn(sample.input, *sample.args, **sample.kwargs)


def _ct_maker():
    cache: dict = {}

    def make(outs):
        key = tuple((tuple(o.shape), o.dtype) for o in outs)
        if key not in cache:
            g = torch.Generator().manual_seed(1234)
            cache[key] = [torch.randn(o.shape, generator=g, dtype=torch.float32).to(o.dtype) for o in outs]
        return cache[key]

    return make


def _signature(e: BaseException) -> str:
    inner = e
    for _ in range(5):
        nxt = getattr(inner, "inner_exception", None) or inner.__cause__
        if nxt is None or type(inner).__name__ not in (
            "BackendCompilerFailed", "InternalTorchDynamoError", "TorchRuntimeError", "InterpreterError",
        ):  # fmt: skip
            break
        inner = nxt
    first = next((ln for ln in str(inner).splitlines() if ln.strip()), "")
    return f"{type(inner).__name__}: {first.strip()[:240]}"


def check_op(op, dtype, mode="forward", limit=None, backend="fxlens") -> Result:
    """Compile each sample of `op` (at most `limit`) with `backend` and compare with eager.

    Args:
        op: an OpInfo from op_db.
        dtype: the sample dtype.
        mode: "forward" (outputs) or "backward" (outputs and input grads for seeded cotangents).
        limit: the number of samples (None: all of them).
        backend: the torch.compile backend under test.
    """
    from fxlens.backend import compile_fx

    res = Result(opinfo_id(op), dtype, mode, xfail=xfail_reason(opinfo_id(op), dtype, mode))
    t0 = time.perf_counter()
    backward = mode == "backward"
    fn = op.get_op()
    exact = op.name in CASTS or opinfo_id(op) in CASTS
    cts = _ct_maker()
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend=backend, dynamic=False)
    patch = torch._dynamo.config.patch(recompile_limit=1000, accumulated_recompile_limit=100000,
                                       automatic_dynamic_shapes=False)  # fmt: skip
    # Dynamo times each new guard set after a cache flush, ~0.12 s per compile on this box: a metric
    # for its logs, nothing the comparison needs (the sweep is ~20,000 compiles)
    no_guard_timing = unittest.mock.patch.object(torch._dynamo.guards, "profile_guard_manager", _no_timing)
    with patch, no_guard_timing, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for sample in _samples(op, dtype, backward, limit):
            try:  # eager first: a sample eager rejects says nothing about fxlens
                s_eager = _clone(sample)
                expected = _call(fn, s_eager)
                if backward:
                    g = _grads(expected, _leaves(s_eager), cts)
                    if g is None:
                        res.skipped += 1
                        continue
                    expected = (expected, g)
            except Exception:
                res.skipped += 1
                continue
            compile_fx.COMPILED.clear()
            s_comp = _clone(sample)
            try:
                actual = _call(compiled, s_comp)
                if backward:
                    actual = (actual, _grads(actual, _leaves(s_comp), cts))
            except Exception as e:  # noqa: BLE001 - every exception is a finding
                res.failure = res.failure or f"crash: {_signature(e)}"
                res.samples += 1
                continue
            res.samples += 1
            for call in compile_fx.COMPILED:
                res.graphs += 1
                res.kernels += len(call.kernels)
                res.fallbacks.update(call.fallbacks)
            ref = _reference(fn, sample, backward, cts)
            bad = _compare(op, dtype, actual, expected, exact, "grad" if backward else "out", ref, sample)
            if bad and res.failure is None:
                res.failure = f"wrong: {bad}"
    torch._dynamo.reset()
    res.seconds = time.perf_counter() - t0
    return res


def sweep_limit(mode: str, dtype: torch.dtype) -> int | None:
    """Samples per (op, dtype, mode) in the slow sweep; FXLENS_OPINFO_SAMPLES=all: every sample."""
    if os.environ.get("FXLENS_OPINFO_SAMPLES") == "all":
        return None
    return SWEEP_LIMITS.get((mode, dtype), OTHER_DTYPE_LIMIT)


def _no_timing(*args, **kwargs) -> float:
    return 0.0


def op_status(opinfo, dtype, mode="forward", limit: int | None | str = "sweep") -> str:
    """`kernel` | `fallback` | `xfail` | `crash` | `wrong` | `skip` | `xpass` for one op and dtype.

    Args:
        opinfo: an OpInfo from op_db.
        dtype: the sample dtype.
        mode: "forward" or "backward".
        limit: samples to run: "sweep" (the slow sweep's number), an int, or None (all of them).
    """
    if limit == "sweep":
        limit = sweep_limit(mode, dtype)
    with quiet():
        return check_op(opinfo, dtype, mode, limit).status


@contextlib.contextmanager
def quiet():
    """Dynamo's graph-break and recompile warnings off (the sweep makes thousands of them)."""
    import logging

    log = logging.getLogger("torch._dynamo")
    old = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(old)
