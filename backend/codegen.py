"""Triton codegen: turns a kernel (an ordered list of scheduled IR nodes) into Triton source.

Pointwise kernels iterate a flat `xindex` with a mask. Reduction kernels iterate rows (`xindex`,
shape [XBLOCK, 1]) and a reduced axis (`rindex`, [1, RBLOCK]): persistent (the whole row in one
block) when it fits, else one loop over `rindex` per reduction. A value stored earlier in the same
kernel is reused from its register when a later node reads it at the same index; any other read of a
buffer this kernel writes is refused (`Incompatible`), which is what makes fusion legal or not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import torch

from fxlens.backend.ir import (
    TL_DTYPE,
    Buffer,
    Pointwise,
    Recip,
    Reduction,
    compute_dtype,
    full_index,
    linear,
    numel,
)
from fxlens.backend.symbolic import bindings, hint, is_static, render, used_symbols


class Incompatible(Exception):
    """A node cannot join a kernel (reason in the message)."""


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


_IDENT = re.compile(r"[A-Za-z_]\w*")


def index_equal(a: str, b: str, xnumel, rnumel) -> bool:
    """Whether two index expressions agree on the whole iteration domain (evaluated with numpy).

    With symbolic sizes the expressions are sampled at two bindings of the size symbols: their
    hints, and distinct small values (two symbols sharing a hint are not taken as equal)."""
    if a == b:
        return True
    names = set(_IDENT.findall(a)) | set(_IDENT.findall(b))
    syms = names - {"xindex", "rindex"}
    envs = bindings() if syms or not is_static(xnumel, rnumel) else [{}]
    if not syms <= set(envs[0]):
        return False
    for sym_env in envs:
        xn, rn = (int(eval(render(n), {"__builtins__": {}}, sym_env)) for n in (xnumel, rnumel))  # noqa: S307
        xs = _sample(xn)[:, None]
        rs = _sample(rn)[None, :]
        env = {"xindex": xs, "rindex": rs, "__builtins__": {}, **sym_env}
        va, vb = eval(a, env), eval(b, env)  # noqa: S307 - our own generated arithmetic
        shape = (xs.size, rs.size)
        if not np.all(np.broadcast_to(va, shape) == np.broadcast_to(vb, shape)):
            return False
    return True


def _sample(n: int) -> np.ndarray:
    """All of 0..n-1 when small; else its start, its end and an even spread (bounded compile cost)."""
    if n <= 512:
        return np.arange(n, dtype=np.int64)
    pts = np.concatenate(
        [np.arange(256), n - 1 - np.arange(128), np.linspace(0, n - 1, 256).astype(np.int64)]
    )
    return np.unique(pts).astype(np.int64)


def _lit(v) -> str:
    if not is_static(v):
        return render(v)  # a symbolic size used as a scalar operand (x / n)
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, float):
        if v != v:
            return 'float("nan")'
        if v in (float("inf"), float("-inf")):
            return 'float("inf")' if v > 0 else 'float("-inf")'
    return repr(v)


class KernelCtx:
    """Emits the body of one kernel; the IR's `fn(ctx, idx)` callbacks call into it."""

    def __init__(self, kernel: Kernel, persistent: bool, needed: set[str] | None, perturb: bool):
        self.k = kernel
        self.red = kernel.is_reduction
        self.persistent = persistent
        self.needed = needed  # root names to store (None: all)
        self.perturb = perturb
        self.lines: list[str] = []
        self.indent = 1
        self.cse: dict[str, str] = {}
        self.n = 0
        self.params: dict[str, Buffer] = {}
        self.stored: dict[str, tuple] = {}
        self.loaded: dict[str, list[str]] = {}
        self.produced = {sn.out.base.name for sn in kernel.nodes if not sn.mutation}
        self.level = "x"
        self.scope = 0
        self.closure: set = set()
        self.boundary: dict[tuple, Buffer] = {}
        self.read_elems: dict[str, int] = {}
        self.written: dict[str, Buffer] = {}
        self.uses_prod = False
        self.exact: set = set()  # (var, fp16/bf16): fp32 vars that hold a value of that dtype exactly
        self.helpers: dict[str, str] = {}  # extra @triton.jit helpers a lowering asked for (name -> source)

    # --- emission helpers -------------------------------------------------------------------
    def emit(self, line: str) -> None:
        self.lines.append("    " * self.indent + line)

    def op(self, expr: str) -> str:
        if expr.isidentifier():
            return expr
        if expr in self.cse:
            return self.cse[expr]
        var = f"t{self.n}"
        self.n += 1
        self.emit(f"{var} = {expr}")
        self.cse[expr] = var
        return var

    def cast(self, var: str, src: torch.dtype, dst: torch.dtype) -> str:
        dst_orig = dst
        narrow = dst in (torch.float16, torch.bfloat16) and src != dst and src != torch.bool
        if src in (torch.float16, torch.bfloat16) and src != dst:
            # an fp16/bf16 value computed in fp32 in this kernel: round it where eager's cast reads it
            var = self.round_low(var, src)
        src, dst = compute_dtype(src), compute_dtype(dst)
        if src != dst:
            var = self.op(f"{var} != 0") if dst == torch.bool else self.op(f"{var}.to({TL_DTYPE[dst]})")
        if narrow:  # fp16/bf16 are computed in fp32, but a cast rounds there, as eager's does
            var = self.round_low(var, dst_orig)
        return var

    def round_low(self, var: str, dtype: torch.dtype) -> str:
        """An fp32 value rounded to nearest-even fp16/bf16, kept in fp32 (exact when stored).

        fp64 sources reach here already rounded to fp32: eager's casts round twice too (c10's
        Half/BFloat16 are built from a float), so that is bit-exact with eager."""
        if (var, dtype) in self.exact:  # loaded from an fp16/bf16 buffer, or rounded already
            return var
        if dtype == torch.float16:
            out = self.op(f"{var}.to(tl.float16).to(tl.float32)")
        else:  # the interpreter's fp32 -> bf16 `.to` truncates (fp_downcast_rounding is ignored there)
            self.helpers["_fx_round_bf16"] = _ROUND_BF16
            out = self.op(f"_fx_round_bf16({var})")
        self.exact.add((out, dtype))
        return out

    def block(self) -> str:
        if not self.red:
            return "[XBLOCK]"
        return "[XBLOCK, RBLOCK]" if self.level == "r" else "[XBLOCK, 1]"

    def full(self, value, dtype: torch.dtype) -> str:
        dt = compute_dtype(dtype)
        v = _lit(bool(value) if dt == torch.bool else value)
        return self.op(f"tl.full({self.block()}, {v}, {TL_DTYPE[dt]})")

    def index_tensor(self, expr: str, dtype: torch.dtype = torch.int64) -> str:
        if re.search(r"[A-Za-z_]", expr):
            return self.op(f"({expr}).to({TL_DTYPE[dtype]})")
        return self.op(f"tl.full({self.block()}, {expr}, {TL_DTYPE[dtype]})")

    def enter(self, node) -> None:
        self.closure.add(node)

    def _param(self, root: Buffer) -> str:
        self.params.setdefault(root.name, root)
        return f"p_{root.name}"

    def _mask(self, off: str) -> str:
        return "xrmask" if self.red and "rindex" in off else "xmask"

    # --- memory -----------------------------------------------------------------------------
    def load(self, buf: Buffer, idx) -> str:
        root = buf.base
        off = linear(idx, buf.stride, buf.offset)
        if root.name in self.produced:
            st = self.stored.get(root.name)
            if st is None:
                raise Incompatible(f"{root.name} is read before this kernel writes it")
            soff, var, slevel, sscope = st
            if slevel == "r" and (self.level != "r" or sscope != self.scope):
                raise Incompatible(f"{root.name} is needed outside the loop that computes it")
            if not index_equal(soff, off, self.k.xnumel, self.k.rnumel):
                raise Incompatible(f"{root.name} is read at a different index than it is written")
            if buf.node is not None:
                self.enter(buf.node)
            return var
        if buf.node is not None:
            self.boundary[(buf.node, buf.item)] = buf
        self.loaded.setdefault(root.name, []).append(off)
        # a gather reads one per point; counted at the size hints when sizes are symbolic
        points = hint(self.k.xnumel) * (hint(self.k.rnumel) if "rindex" in off else 1)
        self.read_elems[root.name] = self.read_elems.get(root.name, 0) + min(hint(numel(buf.shape)), points)
        p = self._param(root)
        if "xindex" not in off and "rindex" not in off:
            off = f"{off} + 0 * xindex"
        var = self.op(f"tl.load({p} + ({off}), {self._mask(off)}, other=0)")
        if buf.dtype != compute_dtype(buf.dtype):
            var = self.op(f"{var}.to({TL_DTYPE[compute_dtype(buf.dtype)]})")
            self.exact.add((var, buf.dtype))
        return var

    def store(self, sn: SchedNode, idx, var: str, src_dtype: torch.dtype) -> None:
        buf = sn.out
        root = buf.base
        off = linear(idx, buf.stride, buf.offset)
        for other in self.loaded.get(root.name, []):
            if not index_equal(other, off, self.k.xnumel, self.k.rnumel):
                raise Incompatible(f"{root.name} is mutated at an index other kernels' reads use")
        self.stored[root.name] = (off, var, self.level, self.scope)
        if self.needed is not None and root.name not in self.needed and not sn.mutation:
            return
        val = self.cast(var, src_dtype, buf.dtype)
        if self.perturb and buf.dtype.is_floating_point:
            val = self.op(f"{val} + 1.0")  # FXLENS_INJECT=accuracy
        if buf.dtype == torch.bfloat16:  # round to nearest-even first: the interpreter truncates
            val = self.round_low(val, buf.dtype)
        if buf.dtype != compute_dtype(buf.dtype) or buf.dtype == torch.bool:
            val = self.op(f"{val}.to({TL_DTYPE[buf.dtype]})")
        if "xindex" not in off and "rindex" not in off:
            off = f"{off} + 0 * xindex"
        self.emit(f"tl.store({self._param(root)} + ({off}), {val}, {self._mask(off)})")
        self.written[root.name] = root

    # --- structure --------------------------------------------------------------------------
    def open_loop(self) -> dict:
        saved = dict(self.cse)
        self.scope += 1
        self.emit("for roff in range(0, rnumel, RBLOCK):")
        self.indent += 1
        self.emit("rindex = roff + rbase")
        self.emit("rmask = rindex < rnumel")
        self.emit("xrmask = xmask & rmask")
        return saved

    def close_loop(self, saved: dict) -> None:
        self.indent -= 1
        self.cse = saved


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


# fp32 -> nearest-even bf16 on the bits (add half an ulp, ties to even, drop the low half), kept in
# fp32; NaN stays NaN (the carry could turn a NaN payload into inf)
_ROUND_BF16 = """
@triton.jit
def _fx_round_bf16(x):
    x = x.to(tl.float32)  # (a value some lowering already holds as bf16/fp16: exact)
    b = x.to(tl.uint32, bitcast=True)
    r = (b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000
    return tl.where(x != x, x, r.to(tl.float32, bitcast=True))
"""

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
    ident = _lit(_identity(r.rtype, acc_dt))
    arg = r.rtype in ("argmax", "argmin")
    looped = not ctx.persistent
    for n in [r.node, *r.extra_nodes]:
        if n is not None:
            ctx.enter(n)
    if looped:
        if arg:
            best = ctx.op(f"tl.full([XBLOCK, 1], {ident}, {tl_acc})")
            bidx = ctx.op("tl.full([XBLOCK, 1], 0, tl.int64)")
            ctx.cse.clear()
        else:
            acc = f"acc{ctx.n}"
            ctx.n += 1
            ctx.emit(f"{acc} = tl.full([XBLOCK, RBLOCK], {ident}, {tl_acc})")
        saved = ctx.open_loop()
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
    if looped:
        ctx.close_loop(saved)
        ctx.cse = {}
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
        res = ctx.op(f"{res} * {_lit(float(r.scale))}")
    from fxlens.backend.ir import decompose

    ctx.store(sn, decompose("xindex", sn.out.shape), res, out_dt)


def _emit_pointwise(ctx: KernelCtx, sn: SchedNode) -> None:
    level = ctx.k.level(sn)
    if level == "r":
        if tuple(sn.out.shape) != tuple(ctx.k.full or ()):
            raise Incompatible("shape differs from the reduction's domain")
        saved = None if ctx.persistent else ctx.open_loop()
        ctx.level = "r"
        idx = full_index(ctx.k.full, ctx.k.rdims)
    else:
        ctx.level = "x"
        from fxlens.backend.ir import decompose

        idx = decompose("xindex", sn.out.shape)
    v = sn.value.load(ctx, idx)
    ctx.store(sn, idx, v, sn.value.dtype)
    if level == "r" and saved is not None:
        ctx.close_loop(saved)
    ctx.level = "x"


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
        ctx.cse = {k: v for k, v in ctx.cse.items()}
        custom = getattr(sn.value, "emit", None)  # scans and scatters bring their own loop structure
        if custom is not None:
            custom(ctx, sn)
        elif sn.is_reduction:
            _emit_reduction(ctx, sn)
        else:
            _emit_pointwise(ctx, sn)
    params = list(ctx.params.values())
    size_args = used_symbols("\n".join(ctx.lines))  # symbolic sizes: scalar arguments
    sig = ", ".join([f"p_{b.name}" for b in params] + size_args)
    head = ["import triton", "import triton.language as tl", ""]
    if "libdevice." in "\n".join(ctx.lines):  # GPU-only math forms (see lowerings.libdevice_form)
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
    )


def _needs_int64(kernel: Kernel) -> bool:
    """int64 indexing when the domain or a buffer reaches 2**31 (at the size hints: a symbolic kernel
    compiled with int32 checks its sizes at launch, see CompiledKernel)."""
    big = hint(kernel.xnumel) * hint(kernel.rnumel)
    for sn in kernel.nodes:
        big = max(big, hint(sn.out.base.storage_numel()))
    return big >= 2**31 - 1
