"""Triton codegen: turns a kernel (an ordered list of scheduled IR nodes) into Triton source.

Pointwise kernels iterate a flat `xindex` with a mask. Reduction kernels iterate rows (`xindex`,
shape [XBLOCK, 1]) and a reduced axis (`rindex`, [1, RBLOCK]): persistent (the whole row in one
block) when it fits, else loops over `rindex`, as few as the reductions' dependencies allow (see
kernel_ctx). A value stored earlier in the same kernel is reused from its register when a later node
reads it at the same index (recomputed when an earlier loop computed it); any other read of a
buffer this kernel writes is refused (`Incompatible`), which is what makes fusion legal or not.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from fxlens.backend.ir import (
    TL_DTYPE,
    Buffer,
    Pointwise,
    Recip,
    Reduction,
    compute_dtype,
    decompose,
    full_index,
    numel,
)
from fxlens.backend.kernel_ctx import Incompatible, KernelCtx, NotYet, row_index, triton_literal
from fxlens.backend.symbolic import hint, is_static, render, used_symbols

__all__ = ["Kernel", "KernelSource", "SchedNode", "generate", "persistent"]


@dataclass(eq=False)
class SchedNode:
    """One realized value: computed by a kernel and stored into `out`."""

    value: Pointwise | Reduction
    out: Buffer  # the buffer written (a kernel buffer, or a graph input for a mutation)
    mutation: bool = False

    @property
    def name(self) -> str:
        return self.out.name

    @property
    def is_reduction(self) -> bool:
        return isinstance(self.value, Reduction)

    @property
    def domain(self) -> tuple[int, int]:
        if isinstance(self.value, Reduction):
            return self.value.xnumel, self.value.rnumel
        return numel(self.out.shape), 1


@dataclass(eq=False)
class Kernel:
    """A group of fused nodes with one iteration domain."""

    nodes: list[SchedNode]
    xnumel: int
    rnumel: int = 1
    full: tuple[int, ...] | None = None  # full domain shape of a reduction kernel
    rdims: tuple[int, ...] = ()
    name: str = ""
    reads: set = field(default_factory=set)  # root buffer names read from memory
    recomputed: set = field(default_factory=set)  # values computed again in a later loop (fusion log)

    @property
    def is_reduction(self) -> bool:
        return any(n.is_reduction for n in self.nodes)

    def level(self, sn: SchedNode) -> str:
        if sn.is_reduction or not self.is_reduction:
            return "x"
        return "x" if numel(sn.out.shape) == self.xnumel else "r"


def persistent(k: Kernel, rmax: int) -> bool:
    """Whole rows in one block only when the row length is known: a symbolic one is always looped
    (RBLOCK cannot follow a size known only at run time without recompiling)."""
    return is_static(k.rnumel) and k.rnumel <= rmax


_IDENTITY = {"sum": 0, "prod": 1, "any": 0}


def _identity(rtype: str, dt: torch.dtype):
    if rtype in _IDENTITY:
        return _IDENTITY[rtype]
    if dt.is_floating_point:
        return float("-inf") if rtype in ("max", "argmax") else float("inf")
    # iinfo.min, not -max: 0 for uint8 (Triton refuses negative scalars with unsigned tensors)
    return torch.iinfo(dt).min if rtype in ("max", "argmax") else torch.iinfo(dt).max


def _reduce(rtype: str, v: str, acc_dt: torch.dtype | None = None) -> str:
    # only builtins and our own combine functions: the interpreter cannot call triton's stdlib
    # @jit helpers (tl.sum, tl.argmax, ...) unless TRITON_INTERPRET was set before triton's import.
    if rtype == "sum" and acc_dt in (torch.float32, torch.float64):
        # tl.sum's own combine function, passed, never called: the interpreter recognizes it and
        # sums with numpy (pairwise, as accurate as eager's), where any other combine function is
        # folded one element at a time (error growing with the row: kron's backward was 4x eager's)
        return f"tl.reduce({v}, 1, tl.standard._sum_combine)[:, None]"
    if rtype in ("argmax", "argmin"):
        ri = "tl.broadcast_to(rindex, [XBLOCK, RBLOCK])"
        return f"tl.reduce(({v}, {ri}), 1, _{rtype}_c)[1][:, None]"
    fn = {"sum": "_sum_c", "prod": "_prod_c", "max": "_max_c", "min": "_min_c", "any": "_max_c"}[rtype]
    return f"tl.reduce({v}, 1, {fn})[:, None]"


_HELPERS = """
@triton.jit
def _sum_c(a, b):
    return a + b


@triton.jit
def _prod_c(a, b):
    return a * b


@triton.jit
def _max_c(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def _min_c(a, b):
    return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def _argmax_c(a, ai, b, bi):
    # NaN counts as the largest value, the first NaN wins (torch.argmax)
    a_nan = a != a
    b_nan = b != b
    tie = (a == b) | (a_nan & b_nan)
    take = (a > b) | (a_nan & ~b_nan) | (tie & (ai < bi))
    return tl.where(take, a, b), tl.where(take, ai, bi)


@triton.jit
def _argmin_c(a, ai, b, bi):
    # NaN counts as the smallest value, the first NaN wins (torch.argmin)
    a_nan = a != a
    b_nan = b != b
    tie = (a == b) | (a_nan & b_nan)
    take = (a < b) | (a_nan & ~b_nan) | (tie & (ai < bi))
    return tl.where(take, a, b), tl.where(take, ai, bi)
"""


def _combine(rtype: str, a: str, b: str) -> str:
    return {
        "sum": f"{a} + {b}",
        "prod": f"{a} * {b}",
        "max": f"tl.maximum({a}, {b}, propagate_nan=tl.PropagateNan.ALL)",
        "min": f"tl.minimum({a}, {b}, propagate_nan=tl.PropagateNan.ALL)",
        "any": f"tl.maximum({a}, {b})",
    }[rtype]


def _acc_dtype(r: Reduction) -> torch.dtype:
    src = compute_dtype(r.src.dtype)
    if r.rtype in ("sum", "prod"):
        return compute_dtype(r.dtype)
    if r.rtype == "any" or src == torch.bool:
        return torch.int32
    return src


def _emit_reduction(ctx: KernelCtx, sn: SchedNode) -> None:
    r: Reduction = sn.value
    acc_dt = _acc_dtype(r)
    tl_acc = TL_DTYPE[acc_dt]
    ident = triton_literal(_identity(r.rtype, acc_dt))
    arg = r.rtype in ("argmax", "argmin")
    looped = not ctx.persistent
    for n in [r.node, *r.extra_nodes]:
        if n is not None:
            ctx.enter(n)
    if looped:  # accumulators before the loop, named outside CSE (the loop reassigns them)
        ctx.enter_section("pre")
        if arg:
            best, bidx = ctx.fresh("best"), ctx.fresh("bidx")
            ctx.emit(f"{best} = tl.full([XBLOCK, 1], {ident}, {tl_acc})")
            ctx.emit(f"{bidx} = tl.full([XBLOCK, 1], 0, tl.int64)")
        else:
            acc = ctx.fresh("acc")
            ctx.emit(f"{acc} = tl.full([XBLOCK, RBLOCK], {ident}, {tl_acc})")
        ctx.enter_section("body")
    ctx.level = "r"
    v = r.src.load(ctx, full_index(r.full, r.rdims))
    if r.rtype == "any":
        v = ctx.op(f"({v} != 0).to(tl.int32)")
    else:
        v = ctx.cast(v, r.src.dtype, acc_dt)
    v = ctx.op(f"tl.where(xrmask, {v}, {ident})")
    if not looped:
        res = ctx.op(_reduce(r.rtype, v, acc_dt))
    elif arg:
        bv = ctx.op(_reduce("max" if r.rtype == "argmax" else "min", v))
        bi = ctx.op(f"{_reduce(r.rtype, v)}.to(tl.int64)")  # rindex already includes roff
        cmp = ">" if r.rtype == "argmax" else "<"
        # a block wins if strictly better, or if it found the first NaN (NaN is the extreme, as in torch)
        take = ctx.op(f"({bv} {cmp} {best}) | (({bv} != {bv}) & ({best} == {best}))")
        ctx.emit(f"{bidx} = tl.where({take}, {bi}, {bidx})")
        ctx.emit(f"{best} = tl.where({take}, {bv}, {best})")
    else:
        ctx.emit(f"{acc} = {_combine(r.rtype, acc, v)}")
    if looped:  # finished after the loop: pending (NotYet) for nodes that would share the loop
        ctx.enter_section("post")
        res = bidx if arg else ctx.op(_reduce(r.rtype, acc, acc_dt))
    ctx.level = "x"
    if r.rtype == "prod":
        ctx.uses_prod = True
    out_dt = torch.int64 if arg else acc_dt
    if r.rtype == "any":
        res, out_dt = ctx.op(f"{res} != 0"), torch.bool
    if isinstance(r.scale, Recip):  # 1/n of a symbolic n: divided at run time
        res = ctx.op(f"{res} / {render(r.scale.n)}")
    elif r.scale is not None:
        res = ctx.op(f"{res} * {triton_literal(float(r.scale))}")
    ctx.store(sn, decompose("xindex", sn.out.shape), res, out_dt)
    if looped:
        ctx.enter_section("main")


def _emit_pointwise(ctx: KernelCtx, sn: SchedNode) -> None:
    level = ctx.k.level(sn)
    looped = ctx.red and not ctx.persistent
    if level == "r":
        if numel(sn.out.shape) != numel(ctx.k.full or ()):
            raise Incompatible("size differs from the reduction's domain")
        if looped:
            ctx.enter_section("body")
        ctx.level = "r"
        idx = row_index(ctx.k, sn.out.shape)
    else:
        if looped and ctx.stage is not None:  # a row-level value: before the open loop, if it can
            ctx.enter_section("pre")
        ctx.level = "x"
        idx = decompose("xindex", sn.out.shape)
    v = sn.value.load(ctx, idx)
    ctx.store(sn, idx, v, sn.value.dtype)
    if looped:
        ctx.enter_section("main")
    ctx.level = "x"


def _emit_node(ctx: KernelCtx, sn: SchedNode) -> None:
    """One node's code; in a looped kernel it joins the open loop unless it needs what that loop
    is still computing, then it goes after it (undone and emitted again)."""
    custom = getattr(sn.value, "emit", None)  # scans and scatters bring their own loop structure
    if custom is not None:
        ctx.flush()
        custom(ctx, sn)
        return
    emit = _emit_reduction if sn.is_reduction else _emit_pointwise
    if not ctx.red or ctx.persistent or ctx.stage is None:  # no open loop: nothing can be pending
        emit(ctx, sn)
        return
    snap = ctx.snapshot()
    try:
        emit(ctx, sn)
    except NotYet:
        ctx.restore(snap)
        ctx.flush()
        emit(ctx, sn)


_SIG_TYPE = {
    torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16", torch.float64: "fp64",
    torch.int8: "i8", torch.int16: "i16", torch.int32: "i32", torch.int64: "i64", torch.uint8: "u8",
    torch.bool: "i1",
}  # fmt: skip


@dataclass
class KernelSource:
    source: str
    params: list[Buffer]  # root buffers in parameter order
    persistent: bool
    closure: set
    boundary: dict
    read_bytes: int
    written: dict
    loaded: set
    size_args: list = field(default_factory=list)  # size symbols the kernel takes, in order
    # bytes read again by later loops of a looped reduction (read_bytes counts each buffer once,
    # as inductor's num_bytes_accessed does); and the values recomputed in a later loop
    reread_bytes: int = 0
    recomputed: set = field(default_factory=set)

    def signature(self, int64: bool) -> dict[str, str]:
        """Triton's argument types, e.g. {"p_arg0": "*fp32", "s0": "i32"}: what an ahead-of-time
        `triton.compile` for another target needs (tests cross-compile CPU-built kernels for CUDA)."""
        ints = "i64" if int64 else "i32"
        sig = {f"p_{b.name}": "*" + _SIG_TYPE[b.dtype] for b in self.params}
        return {**sig, **dict.fromkeys(self.size_args, ints), "xnumel": ints, "rnumel": ints}


def generate(kernel: Kernel, name: str, persistent: bool, needed: set[str] | None, perturb: bool = False):
    """Triton source for `kernel` (raises Incompatible if its nodes cannot share one kernel)."""
    ctx = KernelCtx(kernel, persistent, needed, perturb)
    if ctx.red:
        ctx.emit("xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]")
        ctx.emit("xmask = xindex < xnumel")
        ctx.emit("rbase = tl.arange(0, RBLOCK)[None, :]")
        if persistent:
            ctx.emit("rindex = rbase")
            ctx.emit("rmask = rindex < rnumel")
            ctx.emit("xrmask = xmask & rmask")
    else:
        ctx.emit("xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)")
        ctx.emit("xmask = xindex < xnumel")
    if _needs_int64(kernel):
        ctx.lines.insert(1, "    xindex = xindex.to(tl.int64)")
    for sn in kernel.nodes:
        _emit_node(ctx, sn)
    ctx.flush()
    params = list(ctx.params.values())
    size_args = used_symbols("\n".join(ctx.lines))  # symbolic sizes: scalar arguments
    sig = ", ".join([f"p_{b.name}" for b in params] + size_args)
    head = ["import triton", "import triton.language as tl", ""]
    if "libdevice." in "\n".join(ctx.lines):  # GPU-only math forms (see lower/core.py's libdevice_form)
        head.insert(2, "from triton.language.extra import libdevice")
    if ctx.red:
        head += _HELPERS.splitlines()
    for helper in ctx.helpers.values():
        head += helper.splitlines()
    head += [
        "",
        "@triton.jit",
        f"def {name}({sig}, xnumel, rnumel, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):",
    ]
    src = "\n".join(head + ctx.lines) + "\n"
    read_bytes = sum(
        min(n, max(hint(ctx.params[r].storage_numel()), 1)) * ctx.params[r].dtype.itemsize
        for r, n in ctx.read_elems.items()
    )
    row = hint(kernel.xnumel) * hint(kernel.rnumel)
    reread = sum(
        (len(loops) - 1)
        * min(row, max(hint(ctx.params[r].storage_numel()), 1))
        * ctx.params[r].dtype.itemsize
        for r, loops in ctx.passes.items()
    )
    return KernelSource(
        src,
        params,
        persistent,
        ctx.closure,
        ctx.boundary,
        read_bytes,
        ctx.written,
        set(ctx.loaded),
        size_args,
        reread,
        set(ctx.recomputed),
    )


def _needs_int64(kernel: Kernel) -> bool:
    """int64 indexing when the domain or a buffer reaches 2**31 (at the size hints: a symbolic kernel
    compiled with int32 checks its sizes at launch, see CompiledKernel)."""
    big = hint(kernel.xnumel) * hint(kernel.rnumel)
    for sn in kernel.nodes:
        big = max(big, hint(sn.out.base.storage_numel()))
    return big >= 2**31 - 1
