"""Kernel runtime: the on-disk cache (by source hash), loading, launching, and the bisector hooks.

CPU tensors run under Triton's interpreter (the module is loaded with the interpret knob on, since
`triton.jit` decides at decoration time); CUDA tensors run compiled. A kernel can instead be replayed
as its ATen ops (FXLENS_KERNEL_FALLBACK) or checked against an fp64 ATen replay (FXLENS_CHECK_KERNELS).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import math
import os
import sys
import tempfile
from dataclasses import dataclass, field

import torch

from fxlens.backend.torch_compat import tree_map_only
from fxlens.backend.trace_log import log_json

_MODULES: dict[tuple[str, bool], object] = {}


def cache_dir() -> str:
    from fxlens.backend import config

    d = config.cache_dir() or os.path.join(tempfile.gettempdir(), f"fxlens_{os.getuid()}", "kernels")
    os.makedirs(d, exist_ok=True)
    return d


def load_kernel(source: str, name: str, interpret: bool):
    """Write `source` to the cache as `<sha>.py` (once) and return (jit function, path)."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:20]
    path = os.path.join(cache_dir(), f"fxk_{digest}.py")
    key = (digest, interpret)
    if key in _MODULES:
        return getattr(_MODULES[key], name), path
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(source)
        os.replace(tmp, path)
    import triton

    knobs = getattr(getattr(triton, "knobs", None), "runtime", None)  # triton >= 3.4; else the env var
    old = knobs.interpret if knobs is not None else os.environ.get("TRITON_INTERPRET")
    if knobs is not None:
        knobs.interpret = interpret
    elif interpret:
        os.environ["TRITON_INTERPRET"] = "1"
    try:
        spec = importlib.util.spec_from_file_location(f"fxlens_kernel_{digest}_{int(interpret)}", path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
    finally:
        if knobs is not None:
            knobs.interpret = old
        elif old is None:
            os.environ.pop("TRITON_INTERPRET", None)
    _MODULES[key] = mod
    return getattr(mod, name), path


# ops that read only the shape and dtype of a tensor argument: a kernel may stand in for one
# without reading that tensor, and its replay evaluates them on zeros of the same shape
_SHAPE_ONLY = frozenset(
    {"full_like", "zeros_like", "ones_like", "empty_like", "new_zeros", "new_ones", "new_full", "new_empty"}
    | {"sym_size", "sym_stride", "sym_numel", "sym_storage_offset"}
)

_UNINITIALIZED = frozenset(
    {"empty", "empty_like", "empty_strided", "empty_permuted", "new_empty", "new_empty_strided"}
)


def op_name(node) -> str:
    """The op's short name (`erf`, `full_like`): its overload packet's, or the callable's."""
    t = node.target
    return getattr(getattr(t, "_overloadpacket", t), "__name__", str(t)).split(".")[-1]


def _needs_unread(nodes, read: set) -> bool:
    """Whether evaluating `nodes` needs the values of a graph input that is not in `read` (inputs
    computed by other call_function nodes are evaluated from theirs, as `_eval` does)."""
    inside, seen = set(nodes), set()
    todo = list(nodes)
    while todo:
        node = todo.pop()
        for a in node.all_input_nodes:
            if a in read or a in inside or a.op == "get_attr" or (a, node) in seen:
                continue
            seen.add((a, node))
            if a.op == "call_function":
                todo.append(a)
            elif isinstance(a.meta.get("val"), torch.Tensor) and op_name(node) not in _SHAPE_ONLY:
                return True
    return False


def _is_value(node, item) -> bool:
    """Whether an output labelled (node, item) holds a tensor value of that node: not a scratch
    buffer (no node), nor one labelled with a multi-output node as a whole (topk's sort pass)."""
    if node is None:
        return False
    v = node.meta.get("val")
    if item is not None and isinstance(v, (tuple, list)):
        v = v[item] if item < len(v) else None
    return isinstance(v, torch.Tensor)


def _as_fp64(t: torch.Tensor) -> torch.Tensor:
    return t.double() if t.is_floating_point() and t.dtype != torch.float64 else t


def _snapshot(t: torch.Tensor) -> torch.Tensor:
    """A copy of `t` with its storage (offset, strides and the elements between them): a kernel's
    parameter may be a strided view (a non-contiguous input), which the replay lays out again."""
    copy = torch.empty(0, dtype=t.dtype, device=t.device)
    return copy.set_(t.untyped_storage().clone(), t.storage_offset(), t.shape, t.stride())


@dataclass(eq=False)
class CompiledKernel:
    """A launchable kernel plus what the hooks need to replay it as ATen ops.

    The wrapper calls it as `K(*buffers, *size_args, xnumel=N, rnumel=R)`: with symbolic sizes the
    size arguments and numels are computed by the wrapper at run time and the grid follows from them.
    Shapes in `boundary`/`outputs` may be sympy expressions over `size_args`."""

    name: str
    graph: str
    fn: object
    xnumel: object  # int, or a sympy expression (for reports; the launch gets the wrapper's value)
    rnumel: object
    xblock: int
    rblock: int
    ops: list[str]
    replay_nodes: list  # fx nodes to evaluate, in graph order
    boundary: list  # (node, item, param index, shape, stride, offset)
    outputs: list  # (param index, node, item, shape, stride, offset)
    node_msg: str = ""
    runtime_error: bool = False
    fallback: bool = False
    check: bool = False
    size_args: list = field(default_factory=list)  # names of the size symbols it takes
    int64: bool = False  # indexes in int64 (else int32: checked at launch when sizes are symbolic)

    def __call__(self, *args, xnumel: int, rnumel: int) -> None:
        if self.runtime_error:
            raise RuntimeError(f"fxlens: injected runtime_error launching kernel {self.name}{self.node_msg}")
        if xnumel == 0:
            return
        n = len(args) - len(self.size_args)
        bufs = args[:n]
        self.sizes = dict(zip(self.size_args, args[n:], strict=True))
        if self.size_args and not self.int64 and xnumel * rnumel >= 2**31 - 1:
            raise RuntimeError(
                f"fxlens: kernel {self.name} was compiled with int32 indexing for sizes like its first call; "
                f"{xnumel} x {rnumel} elements need int64 (compile without dynamic=True for these sizes)"
            )
        if self.fallback and self.replayable:
            self._write(bufs, self.replay(bufs, fp64=False))
            return
        snap = [_snapshot(a) for a in bufs] if self.check and self.checkable else None
        grid = ((xnumel + self.xblock - 1) // self.xblock,)
        self.fn[grid](*args, xnumel, rnumel, XBLOCK=self.xblock, RBLOCK=self.rblock)
        if snap is not None:
            self._check(snap, bufs)

    @functools.cached_property
    def replayable(self) -> bool:
        """Whether the hooks can evaluate this kernel's FX nodes from what it reads. Not when it
        only fills scratch buffers no FX node computes (histc's zeros, a mean's counts), nor when
        a node needs the values of a tensor the kernel never reads (scatter_reduce mean's quotient
        kernel reads the sum and count buffers, not the scatter's source): such a kernel runs as it
        is and is checked by nothing."""
        return all(_is_value(node, item) for _pi, node, item, *_ in self.outputs) and not (
            _needs_unread(self.replay_nodes, {b[0] for b in self.boundary})
        )

    @functools.cached_property
    def checkable(self) -> bool:
        """Replayable, and computing no uninitialized memory (torch.empty and kin: garbage on both
        sides, nothing to compare)."""
        return self.replayable and not any(op_name(n) in _UNINITIALIZED for n in self.replay_nodes)

    def _env(self) -> dict:
        """Size symbols at this call: the graph's (set by the wrapper when hooks are on) and its own."""
        return {**getattr(self, "graph_sizes", {}), **getattr(self, "sizes", {})}

    def _layout(self, shape, stride, off):
        from fxlens.backend.symbolic import evaluate

        env = self._env()
        return [evaluate(s, env) for s in shape], [evaluate(s, env) for s in stride], evaluate(off, env)

    def replay(self, args, fp64: bool) -> list:
        """Evaluate this kernel's FX nodes with ATen on `args`; returns the output values."""
        env: dict = {}
        self.device = args[0].device if args else torch.device("cpu")
        inside = set(self.replay_nodes)
        for node, item, pi, shape, stride, off in self.boundary:
            if node in inside:
                continue
            a = args[pi]
            shape, stride, off = self._layout(shape, stride, off)
            t = a.as_strided(shape, stride, a.storage_offset() + off)
            if fp64 and t.is_floating_point():
                t = t.double()
            if item is None:
                env[node] = t
            else:
                env.setdefault(node, {})[item] = t
        for node in self.replay_nodes:
            env[node] = self._eval(node, env, fp64)
        res = []
        for _pi, node, item, _s, _st, _o in self.outputs:
            v = env[node]
            res.append(v if item is None else v[item])
        return res

    def _eval(self, node, env, fp64: bool = False):
        """Evaluate `node` with ATen; inputs missing from `env` (e.g. empty tensors a kernel never
        reads, constants) are evaluated from the functional graph first."""
        for a in node.all_input_nodes:
            if a not in env:
                if a.op == "get_attr":
                    env[a] = getattr(a.graph.owning_module, a.target)
                elif a.op == "call_function":
                    env[a] = self._eval(a, env, fp64)
                else:  # an input the kernel never reads (only its shape matters, e.g. full_like)
                    from fxlens.backend.symbolic import evaluate, size

                    v = a.meta.get("val")
                    sizes = self._env()
                    if isinstance(v, torch.SymInt):  # a size input: its value from the size arguments
                        env[a] = evaluate(size(v), sizes)
                        continue
                    if not isinstance(v, torch.Tensor):
                        raise KeyError(f"fxlens: replaying {self.name}: {node.format_node()} needs {a.name}")
                    shape = [evaluate(size(s), sizes) for s in v.shape]
                    env[a] = torch.zeros(shape, dtype=v.dtype, device=self.device)
        a, kw = torch.fx.node.map_arg((node.args, node.kwargs), lambda n: env[n])
        if fp64:  # every floating input in fp64 (constants and stand-ins too: ops like
            # index_put refuse mixed dtypes); values rounded by an earlier cast keep their rounding
            a, kw = tree_map_only(torch.Tensor, _as_fp64, (a, kw))
        return node.target(*a, **kw)

    def _write(self, args, values) -> None:
        for (pi, _node, _item, shape, stride, off), v in zip(self.outputs, values, strict=True):
            a = args[pi]
            shape, stride, off = self._layout(shape, stride, off)
            dst = a.as_strided(shape, stride, a.storage_offset() + off)
            if dst.data_ptr() != v.data_ptr():
                dst.copy_(v.reshape(dst.shape) if v.shape != dst.shape else v)

    def _check(self, snap, args) -> None:
        try:
            ref = self.replay(snap, fp64=True)
        except Exception:  # a diagnostic must not change the run: an ATen bounds check raising here
            return  # hid a kernel that returns a value where eager raises (repro_cases: index_oob_abort)
        max_abs = max_rel = 0.0
        ok = True
        for (pi, _n, _i, shape, stride, off), r in zip(self.outputs, ref, strict=True):
            a = args[pi]
            shape, stride, off = self._layout(shape, stride, off)
            got = a.as_strided(shape, stride, a.storage_offset() + off)
            r = r.reshape(got.shape) if r.shape != got.shape else r
            if got.dtype.is_floating_point:
                g, rr = got.double(), r.double()
                tol = {torch.float16: 1e-2, torch.bfloat16: 5e-2}.get(got.dtype, 1e-4)
            else:
                g, rr, tol = got.to(torch.float64), r.to(torch.float64), 0.0
            if g.numel() == 0:
                continue
            err = (g - rr).abs()
            finite = torch.isfinite(rr) & torch.isfinite(g)
            same_nonfinite = (~finite) & ((g == rr) | (g.isnan() & rr.isnan()))
            err = torch.where(finite, err, torch.where(same_nonfinite, 0.0, float("inf")))
            rel = err / (rr.abs() + 1e-12)
            max_abs = max(max_abs, float(err.max()))
            max_rel = max(max_rel, float(torch.where(err > 0, rel, 0.0).max()))
            ok = ok and bool((err <= tol + tol * rr.abs().nan_to_num(0)).all())
        log_json(
            "kernel_check",
            {
                "graph": self.graph,
                "name": self.name,
                "ops": self.ops,
                "max_abs_err": max_abs,
                "max_rel_err": max_rel,
                "ok": ok,
            },
        )


def fix_layout(t: torch.Tensor, shape, stride) -> torch.Tensor:
    """An extern's result in the layout the kernels were generated for (copied only if it differs).

    None passes through: AOTAutograd feeds effect tokens (inputs of `with_effects`, e.g. linalg's
    error checks) as None at run time, though the graph's metadata says a (0,)-sized tensor."""
    if t is None:
        return None
    if tuple(t.shape) != tuple(shape) and t.numel() != math.prod(shape):
        # ATen's CPU kernel disagrees with the op's meta function (embedding_bag's offset2bag is
        # empty on its fast path): nothing can be laid out; such outputs are unused or re-derived
        return t
    if tuple(t.shape) == tuple(shape) and all(
        a == b or n <= 1 for a, b, n in zip(t.stride(), stride, shape, strict=True)
    ):
        return t
    out = torch.empty_strided(shape, stride, dtype=t.dtype, device=t.device)
    out.copy_(t)
    return out
