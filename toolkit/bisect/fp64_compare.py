"""Accuracy checks for `fxlens bisect`: compiled outputs vs eager, both against an fp64 reference.

Runs in the child process (imports torch). A compiled result passes when, for every output tensor,
its error against the fp64 reference is within the dtype's tolerance, or no worse than
`EAGER_SLACK` times the error eager itself makes in the original dtype (so low-precision graphs are
not blamed for the rounding eager also does). The tolerances are stated in docs/guides/bisect.md.
"""

from __future__ import annotations

from dataclasses import dataclass

# dtype name -> (atol, rtol): |res - ref64| <= atol + rtol * |ref64| elementwise.
# Loose enough for reordered reductions and fused math, tight enough that a wrong op shows.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-7, 1e-7),
    "float32": (1e-4, 1e-4),  # compiled kernels reorder sums; eager fp32 already differs ~1e-6
    "float16": (1e-2, 1e-2),
    "bfloat16": (2e-2, 2e-2),  # 8 mantissa bits: one rounding step is ~4e-3 relative
}
# a compiled output may be this many times as far from fp64 as eager's own output is
EAGER_SLACK = 2.0

# ops whose outputs legitimately differ between eager and compiled code (RNG streams)
RANDOM_OP_MARKERS = ("rand", "dropout", "bernoulli", "multinomial", "normal", "poisson", "uniform")


@dataclass(frozen=True)
class Divergence:
    """How far one compiled output (or gradient) is from the fp64 reference."""

    what: str  # "output 0", "grad of input 2"
    dtype: str
    max_abs_err: float
    max_rel_err: float
    eager_abs_err: float
    ok: bool
    # max |compiled - eager|: nonzero with max_abs_err <= eager_abs_err means the compiled value is
    # the closer one to fp64, and a script that compares with eager still sees them differ
    vs_eager: float = 0.0
    op: str = ""  # the graph op that produced this output (its FX target), when known


def has_random_ops(gm) -> bool:
    """Whether an FX graph draws random numbers (its outputs then differ from eager by design)."""
    for node in gm.graph.nodes:
        if node.op == "call_function" or node.op == "call_method":
            name = getattr(node.target, "__name__", str(node.target)).lower()
            if any(m in name for m in RANDOM_OP_MARKERS):
                return True
    return False


def _copy_one(x, fp64: bool):
    """A detached copy of one tensor: fp64 when asked (floating only), grad flag kept.

    A non-leaf input (the output of an earlier graph) stays a non-leaf, so a graph that mutates
    it in place runs on the copy as it does on the original (a leaf that requires grad would
    refuse the in-place op).
    """
    import torch

    y = x.detach()
    y = y.to(torch.float64).clone() if fp64 and x.is_floating_point() else y.clone()
    if not (x.requires_grad and y.is_floating_point()):
        return y
    y.requires_grad_(True)
    if x.is_leaf:
        return y
    # gradients are taken at the leaf: the value before any in-place update, which is what an
    # AOT graph's gradient reaches too (it writes a mutated input back with copy_ after the graph)
    z = y.clone()
    z._fxlens_grad_root = y
    return z


def _storage_key(x):
    try:
        return (x.device, x.untyped_storage().data_ptr(), x.dtype)
    except Exception:  # sparse, nested, some subclasses: no plain storage; copied alone
        return None


def _copy_group(group: list, fp64: bool) -> list:
    """Copies of tensors that share one storage, sharing one copied storage the same way."""
    import torch

    first = group[0]
    base = torch.empty(0, dtype=first.dtype, device=first.device).set_(first.untyped_storage())
    base = base.to(torch.float64).clone() if fp64 and base.is_floating_point() else base.clone()
    views = []
    for t in group:
        v = base.as_strided(t.size(), t.stride(), t.storage_offset())
        views.append(v.requires_grad_(True) if t.requires_grad and v.is_floating_point() else v)
    return views


def copy_args(args, fp64: bool = False) -> list:
    """Copies of a graph call's inputs that the graph sees exactly as it sees the originals.

    The same tensor passed twice stays one tensor; tensors that share storage (views of one
    buffer, a parameter and its alias) share one copied storage, so an in-place update through
    one is seen through the other; other values are passed as they are. With `fp64`, floating
    tensors become float64. The originals are never touched.
    """
    import torch

    groups: dict = {}
    for a in args:
        if isinstance(a, torch.Tensor):
            key = _storage_key(a)
            if key is not None and key[1] != 0:
                members = groups.setdefault(key, [])
                if not any(m is a for m in members):
                    members.append(a)
    copies: dict[int, object] = {}
    for members in groups.values():
        if len(members) > 1:
            try:
                copies.update(zip(map(id, members), _copy_group(members, fp64), strict=True))
            except Exception:  # odd layouts: independent copies, aliasing lost, values still right
                pass
    out = []
    for a in args:
        if isinstance(a, torch.Tensor) and id(a) not in copies:
            copies[id(a)] = _copy_one(a, fp64)
        out.append(copies[id(a)] if isinstance(a, torch.Tensor) else a)
    return out


def flat_tensors(out) -> list:
    """The tensors of a (nested) graph output, in order."""
    import torch

    from fxlens.backend.torch_compat import tree_leaves

    return [t for t in tree_leaves(out) if isinstance(t, torch.Tensor)]


def compare(what: str, res, ref, ref64) -> Divergence:
    """Compare one compiled tensor with eager (`ref`, same dtype) and fp64 (`ref64`) results."""
    import torch

    dtype = str(res.dtype).removeprefix("torch.")
    if res.shape != ref64.shape:
        return Divergence(what, dtype, float("inf"), float("inf"), 0.0, False)
    if ref is not ref64 and res.dtype != ref.dtype:
        # a wrong dtype is wrong whatever the values (int64 where eager returns int8): the script
        # sees another type, overflow and memory
        eager = str(ref.dtype).removeprefix("torch.")
        return Divergence(what, f"{dtype} (eager: {eager})", float("inf"), float("inf"), 0.0, False)
    if not res.is_floating_point() and not res.is_complex():
        bad = int((res.detach().cpu() != ref.detach().cpu()).sum())
        return Divergence(what, dtype, float(bad), float(bad), 0.0, bad == 0)
    r = res.detach().to("cpu", torch.float64)
    e = ref.detach().to("cpu", torch.float64)
    g = ref64.detach().to("cpu", torch.float64)
    if r.numel() == 0:
        return Divergence(what, dtype, 0.0, 0.0, 0.0, True)
    # NaN where the reference has NaN is agreement; NaN elsewhere is a divergence
    nan_ok = bool(torch.equal(torch.isnan(r), torch.isnan(g)))
    diff = (r - g).abs().nan_to_num(0.0, posinf=float("inf"))
    eager_diff = (e - g).abs().nan_to_num(0.0)
    atol, rtol = TOLERANCES.get(dtype, (1e-4, 1e-4))
    within = bool((diff <= atol + rtol * g.abs().nan_to_num(0.0)).all())
    max_abs = float(diff.max())
    eager_abs = float(eager_diff.max())
    rel = float((diff / g.abs().clamp_min(atol)).max())
    ok = nan_ok and (within or max_abs <= EAGER_SLACK * eager_abs)
    vs_eager = float((r - e).abs().nan_to_num(0.0, posinf=float("inf")).max())
    return Divergence(what, dtype, max_abs, rel, eager_abs, ok, vs_eager)


class EagerRaised(Exception):
    """Eager raised on the call's inputs in their own dtype (`error`): no values to compare, but
    what the compiled call must do too (`fxlens.bisect.eager_call`)."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


@dataclass
class References:
    """Eager results of one graph call, in the inputs' dtypes and in fp64, on copies of its inputs.

    `probe_args` are a third, untouched copy: the compiled graph is called once on them for the
    check (`fxlens.bisect.backend`), so its gradients are those of this graph alone, as the
    references' are, never mixed with the autograd history of the user's real inputs.
    """

    args: list
    args64: list
    out: list
    out64: list
    probe_args: list


def references(gm, args: list) -> References:
    """Run `gm` eagerly on copies of `args`, in their dtype and in fp64, before the compiled call.

    Copies are taken first because graphs may mutate their inputs, and the runs happen under a
    forked RNG state, so the user's run continues exactly as it would without the check.
    """
    import torch

    probe_args = copy_args(args)
    ref_args = copy_args(args)
    ref64_args = copy_args(args, fp64=True)
    with torch.random.fork_rng(devices=[]):
        try:
            ref = gm(*ref_args)
        except Exception as e:  # eager itself raises on this call: a behaviour to compare with
            raise EagerRaised(e) from e
    with torch.random.fork_rng(devices=[]):
        ref64 = gm(*ref64_args)
    return References(ref_args, ref64_args, flat_tensors(ref), flat_tensors(ref64), probe_args)


def output_ops(gm) -> list[str]:
    """The FX target that produced each tensor output of `gm`, in output order ("" when unknown)."""
    from fxlens.backend import torch_compat

    try:
        out = next(n for n in gm.graph.nodes if n.op == "output")
        leaves = torch_compat.tree_leaves(out.args[0])
    except Exception:
        return []
    ops = []
    for n in leaves:
        target = getattr(n, "target", "")
        ops.append(target if isinstance(target, str) else getattr(target, "__name__", str(target)))
    return ops


def compare_result(args: list, result, refs: References, check_grads: bool) -> list[Divergence]:
    """One Divergence per output tensor of the compiled call, and per gradient of its inputs.

    Gradients are compared when grad mode is on and inputs require grad: both sides are
    differentiated with the same random cotangent, with `retain_graph` so the user's own backward
    still works.
    """
    import torch

    outs = flat_tensors(result)
    divs = [
        compare(f"output {i}", o, e, g)
        for i, (o, e, g) in enumerate(zip(outs, refs.out, refs.out64, strict=False))
    ]
    if len(outs) != len(refs.out64):
        divs.append(Divergence("number of outputs", "", float("inf"), float("inf"), 0.0, False))
    if check_grads and torch.is_grad_enabled():
        divs += _check_grads(args, refs.args, refs.args64, outs, refs.out, refs.out64)
    return divs


def _check_grads(args, ref_args, ref64_args, outs, refs, refs64) -> list[Divergence]:
    import torch

    idx = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and a.requires_grad]
    pairs = [
        k
        for k, o in enumerate(outs)
        if o.requires_grad and o.is_floating_point() and k < len(refs) and refs64[k].requires_grad
    ]
    if not idx or not pairs:
        return []
    gen = torch.Generator().manual_seed(0)  # a private generator: the user's RNG is untouched
    cot = [torch.randn(outs[k].shape, generator=gen, dtype=torch.float64) for k in pairs]

    def grads(inputs, outputs):
        return torch.autograd.grad(
            [outputs[k] for k in pairs],
            [getattr(inputs[i], "_fxlens_grad_root", inputs[i]) for i in idx],
            grad_outputs=[
                c.to(outputs[k].dtype).to(outputs[k].device) for c, k in zip(cot, pairs, strict=True)
            ],
            retain_graph=True,
            allow_unused=True,
        )

    # the script's backward runs outside the compiled call, where autocast is normally off (the
    # usual `with autocast(): loss = ...` then `loss.backward()`); this check runs inside the call,
    # under the caller's autocast: turn it off, as the script's backward has it
    with _autocast_off():
        got, eager, exact = grads(args, outs), grads(ref_args, refs), grads(ref64_args, refs64)
    divs = []
    for i, g, e, x in zip(idx, got, eager, exact, strict=True):
        if g is None and x is None:
            continue
        # autograd answers None where no path reaches the input, and an AOT graph may answer zeros
        # for that same gradient (an input mutated after the output was computed from it): a
        # missing gradient is a zero gradient, so only a nonzero one on the other side diverges
        g = _zero_grad(args[i]) if g is None else g
        e = _zero_grad(ref_args[i]) if e is None else e
        x = _zero_grad(ref64_args[i]) if x is None else x
        divs.append(compare(f"grad of input {i}", g, e, x))
    return divs


def _zero_grad(inp):
    """The gradient autograd leaves as None for input `inp`: zeros of its shape and dtype."""
    import torch

    return torch.zeros(inp.shape, dtype=inp.dtype, device=inp.device)


def _autocast_off():
    """A context with autocast off on CPU and on CUDA (when it is on), as outside the caller's
    `with torch.autocast(...)` block."""
    import contextlib

    import torch

    stack = contextlib.ExitStack()
    for device in ("cpu", "cuda"):
        try:
            if torch.is_autocast_enabled(device):
                stack.enter_context(torch.autocast(device_type=device, enabled=False))
        except (RuntimeError, TypeError):  # a torch without per-device autocast state, no CUDA
            continue
    return stack
