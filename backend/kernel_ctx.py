"""The emission context of one kernel: code lines, CSE, loads and stores, and the loops of a looped
reduction.

A looped reduction kernel (rows longer than FXLENS_PERSISTENT_RMAX, or of symbolic length) runs its
row-level (`r`) nodes in loops over RBLOCK-wide blocks of the row. Consecutive nodes share one loop
(a `Stage`: code before the loop, the loop body, code after it) until a node needs a reduction that
the open loop is still accumulating (`NotYet`): then the loop is closed and the node starts the next
one. A pointwise value computed inside an earlier loop is not in a register any more when a later
loop needs it; it is recomputed there from its own inputs (what inductor does), never refused. Its
inputs are then read once per loop: `passes` counts those re-reads for the kernel's byte record.
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
    compute_dtype,
    contiguous_strides,
    decompose,
    full_index,
    linear,
    numel,
)
from fxlens.backend.symbolic import bindings, hint, is_static, render


class Incompatible(Exception):
    """A node cannot join a kernel (reason in the message)."""


class NotYet(Incompatible):
    """A node needs a value the open loop is still computing: it must go after that loop."""


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


def triton_literal(v) -> str:
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


@dataclass
class Stage:
    """One loop over the row of a looped reduction kernel, still open for more nodes."""

    scope: int
    pre: list = field(default_factory=list)  # before the loop: accumulators, row-level values
    body: list = field(default_factory=list)
    post: list = field(default_factory=list)  # after it: finishing the reductions
    body_cse: dict = field(default_factory=dict)
    post_cse: dict = field(default_factory=dict)
    touched: set = field(default_factory=set)  # roots loaded or stored in the body or after it

    def copy(self) -> Stage:
        return Stage(self.scope, list(self.pre), list(self.body), list(self.post), dict(self.body_cse),
                     dict(self.post_cse), set(self.touched))  # fmt: skip


def row_index(kernel, shape) -> list[str]:
    """Index of a value over a reduction kernel's full domain, in its own `shape`: the domain's
    index, or for another shape of as many elements (a view of the same elements, e.g. GroupNorm's
    (N, C, H, W) against its (N, C, H*W) rows) the same row-major position decomposed in `shape`
    (reads of it are checked with `index_equal` like any other)."""
    idx = full_index(kernel.full, kernel.rdims)
    if tuple(shape) == tuple(kernel.full):
        return idx
    return decompose(f"({linear(idx, contiguous_strides(kernel.full))})", shape)


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


class KernelCtx:
    """Emits the body of one kernel; the IR's `fn(ctx, idx)` callbacks call into it."""

    def __init__(self, kernel, persistent: bool, needed: set[str] | None, perturb: bool):
        self.k = kernel
        self.red = kernel.is_reduction
        self.persistent = persistent
        self.needed = needed  # root names to store (None: all)
        self.perturb = perturb
        self.lines: list[str] = []
        self.out = self.lines  # where `emit` appends: the kernel's lines, or a section of the open stage
        self.section = "main"
        self.indent = 1
        self.cse: dict[str, str] = {}
        self.n = 0
        self.params: dict[str, Buffer] = {}
        self.stored: dict[str, tuple] = {}
        self.loaded: dict[str, list[str]] = {}
        self.produced = {sn.out.base.name for sn in kernel.nodes if not sn.mutation}
        # pointwise nodes of this kernel, by the root they store: recomputed where a later loop needs them
        self.producers = {sn.out.base.name: sn for sn in kernel.nodes
                          if not sn.mutation and isinstance(sn.value, Pointwise)}  # fmt: skip
        self.level = "x"
        self.scope = 0
        self.scopes = 0  # loops opened so far (each loop's scope id)
        self.stage: Stage | None = None
        self._outer_cse: dict[str, str] = {}  # CSE of code before the open loop, while in its body
        self.closure: set = set()
        self.boundary: dict[tuple, Buffer] = {}
        self.read_elems: dict[str, int] = {}
        self.passes: dict[str, set] = {}  # root -> the loops that read it along the row
        self.recomputed: set[str] = set()
        self.written: dict[str, Buffer] = {}
        self.uses_prod = False
        self.exact: set = set()  # (var, fp16/bf16): fp32 vars that hold a value of that dtype exactly
        self.helpers: dict[str, str] = {}  # extra @triton.jit helpers a lowering asked for (name -> source)

    # --- emission helpers -------------------------------------------------------------------
    def emit(self, line: str) -> None:
        self.out.append("    " * self.indent + line)

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

    def fresh(self, prefix: str) -> str:
        """A variable name no CSE entry can hand out (accumulators reassigned in a loop)."""
        var = f"{prefix}{self.n}"
        self.n += 1
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
        v = triton_literal(bool(value) if dt == torch.bool else value)
        return self.op(f"tl.full({self.block()}, {v}, {TL_DTYPE[dt]})")

    def index_tensor(self, expr: str, dtype: torch.dtype = torch.int64) -> str:
        if re.search(r"[A-Za-z_]", expr):
            return self.op(f"({expr}).to({TL_DTYPE[dtype]})")
        return self.op(f"tl.full({self.block()}, {expr}, {TL_DTYPE[dtype]})")

    def enter(self, node) -> None:
        self.closure.add(node)

    def pointer_param(self, root: Buffer) -> str:
        """The kernel's pointer argument for buffer `root`, added on first use (lowerings that store
        outside `store`, such as scatter and histogram, need it too)."""
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
            soff, var, slevel, sscope, sstage = st
            if sstage is not None and sstage is self.stage:
                raise NotYet(f"{root.name} is finished only after the loop that computes it")
            if slevel == "r" and self.level != "r":
                raise Incompatible(f"{root.name} is needed outside the loop that computes it")
            if not index_equal(soff, off, self.k.xnumel, self.k.rnumel):
                raise Incompatible(f"{root.name} is read at a different index than it is written")
            if buf.node is not None:
                self.enter(buf.node)
            if slevel == "r" and sscope != self.scope:
                return self._recompute(root.name)
            return var
        self._touch(root.name)
        if buf.node is not None:
            self.boundary[(buf.node, buf.item)] = buf
        self.loaded.setdefault(root.name, []).append(off)
        # a gather reads one per point; counted at the size hints when sizes are symbolic
        points = hint(self.k.xnumel) * (hint(self.k.rnumel) if "rindex" in off else 1)
        self.read_elems[root.name] = self.read_elems.get(root.name, 0) + min(hint(numel(buf.shape)), points)
        if "rindex" in off:
            self.passes.setdefault(root.name, set()).add(self.scope)
        p = self.pointer_param(root)
        if "xindex" not in off and "rindex" not in off:
            off = f"{off} + 0 * xindex"
        var = self.op(f"tl.load({p} + ({off}), {self._mask(off)}, other=0)")
        if buf.dtype != compute_dtype(buf.dtype):
            var = self.op(f"{var}.to({TL_DTYPE[compute_dtype(buf.dtype)]})")
            self.exact.add((var, buf.dtype))
        return var

    def _recompute(self, name: str) -> str:
        """The value a pointwise node of this kernel stored inside an earlier loop, computed again
        in this loop from its inputs (a reduction would be final after its loop: never recomputed)."""
        sn = self.producers.get(name)
        if sn is None:
            raise Incompatible(f"{name} is needed outside the loop that computes it")
        self.recomputed.add(name)
        return sn.value.load(self, row_index(self.k, sn.out.shape))

    def _touch(self, name: str) -> None:
        """Code placed before the open loop must not read memory the loop writes, or write memory it
        reads (mutated inputs: the kernel's own values never go through memory)."""
        if self.stage is None:
            return
        if self.section == "pre":
            if name in self.stage.touched:
                raise NotYet(f"{name} is read or written by the open loop")
        else:
            self.stage.touched.add(name)

    def store(self, sn, idx, var: str, src_dtype: torch.dtype) -> None:
        buf = sn.out
        root = buf.base
        off = linear(idx, buf.stride, buf.offset)
        if sn.mutation:  # a kernel's own values are read from registers; a mutated input from memory
            self._touch(root.name)
        for other in self.loaded.get(root.name, []):
            if not index_equal(other, off, self.k.xnumel, self.k.rnumel):
                raise Incompatible(f"{root.name} is mutated at an index other kernels' reads use")
        # a value finished after the open loop (a looped reduction) is pending until that loop closes
        pending = self.stage if self.section == "post" else None
        self.stored[root.name] = (off, var, self.level, self.scope, pending)
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
        self.emit(f"tl.store({self.pointer_param(root)} + ({off}), {val}, {self._mask(off)})")
        self.written[root.name] = root

    # --- structure --------------------------------------------------------------------------
    def open_loop(self) -> dict:
        """A loop of its own, emitted in place (scans); the stages below are for reductions."""
        saved = dict(self.cse)
        self.scopes += 1
        self.scope = self.scopes
        self.emit("for roff in range(0, rnumel, RBLOCK):")
        self.indent += 1
        self._loop_header()
        return saved

    def _loop_header(self) -> None:
        self.emit("rindex = roff + rbase")
        self.emit("rmask = rindex < rnumel")
        self.emit("xrmask = xmask & rmask")

    def close_loop(self, saved: dict) -> None:
        self.indent -= 1
        self.cse = saved

    def enter_section(self, section: str) -> None:
        """Emit into the open stage's `pre`, `body` or `post` (opening a stage if none is open), or
        into the kernel's lines (`main`)."""
        if section != "main" and self.stage is None:
            self.scopes += 1
            self.stage = Stage(self.scopes)
            self.stage.body_cse = dict(self.cse)
        self._leave()
        self.section = section
        st = self.stage
        if section == "main":
            self.out, self.indent, self.level = self.lines, 1, "x"
        elif section == "pre":
            self.out, self.indent, self.level = st.pre, 1, "x"
        elif section == "body":
            self.out, self.indent, self.level, self.scope = st.body, 2, "r", st.scope
            self.cse = {**self.cse, **st.body_cse}
        else:
            self.out, self.indent, self.level = st.post, 1, "x"
            self.cse = {**self.cse, **st.post_cse}

    def _leave(self) -> None:
        """Back to the CSE table of code before the open loop (body and post variables stay theirs)."""
        if self.section == "body":
            self.stage.body_cse = self.cse
            self.cse = self._outer_cse
        elif self.section == "post":
            self.stage.post_cse = self.cse
            self.cse = self._outer_cse
        self._outer_cse = dict(self.cse)
        self.section = "main"

    def flush(self) -> None:
        """Close the open stage: its code before, in and after the loop joins the kernel's lines."""
        self.enter_section("main")
        st, self.stage = self.stage, None
        if st is None:
            return
        self.lines.extend(st.pre)
        self.emit("for roff in range(0, rnumel, RBLOCK):")
        self.indent = 2
        self._loop_header()
        self.indent = 1
        self.lines.extend(st.body)
        self.lines.extend(st.post)
        self.cse.update(st.post_cse)
        for name, (off, var, level, scope, pending) in list(self.stored.items()):
            if pending is st:
                self.stored[name] = (off, var, level, scope, None)

    def snapshot(self) -> dict:
        """Everything emitting a node can change, to undo a node that must go after the open loop
        (taken only while a loop is open, when nodes emit into its sections, never into `lines`)."""
        self.enter_section("main")
        keep = ("lines", "out", "k", "producers", "produced", "needed")
        snap = {
            k: (v.copy() if isinstance(v, (list, dict, set)) and k not in keep else v)
            for k, v in vars(self).items()
        }
        snap["loaded"] = {k: list(v) for k, v in self.loaded.items()}
        snap["passes"] = {k: set(v) for k, v in self.passes.items()}
        snap["stage"] = self.stage.copy() if self.stage is not None else None
        snap["_orig_stage"] = self.stage
        return snap

    def restore(self, snap: dict) -> None:
        snap = dict(snap)
        orig, copy = snap.pop("_orig_stage"), snap["stage"]
        for k, v in snap.items():
            setattr(self, k, v)
        self.out = self.lines
        if orig is not None:  # values pending on the stage keep pointing at the restored one
            for name, (off, var, level, scope, pending) in list(self.stored.items()):
                if pending is orig:
                    self.stored[name] = (off, var, level, scope, copy)
