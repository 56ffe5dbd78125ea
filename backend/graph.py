"""Graph lowering: walks an ATen FX graph and turns it into IR values, realized nodes and externs.

Pointwise values stay lazy (functions of the index) and are inlined into their only consumer (a
vertical fusion decision, recorded); values with several users, reductions, graph outputs and
inputs to externs are realized (`SchedNode`s). Ops without a lowering run as ATen calls (`Extern`)
and are counted as fallbacks. Views of realized buffers are strided reinterpretations, never copies.
"""

from __future__ import annotations

import operator
from collections import Counter

import torch
from torch.fx.node import map_aggregate

from fxlens.backend import config
from fxlens.backend.codegen import SchedNode
from fxlens.backend.fallback import failed, sees_symbolic_sizes, static_only, symbolic_ready, unsupported
from fxlens.backend.ir import Buffer, Pointwise, Reduction, Value, contiguous_strides, numel
from fxlens.backend.items import Budget, Extern
from fxlens.backend.lower import table  # noqa: F401 - imports every op family, so LOWERINGS holds them all
from fxlens.backend.lower.core import LOWERINGS
from fxlens.backend.lower.views import VIEW_OPS
from fxlens.backend.symbolic import SymbolicUnsupported, hint, is_static, size, sizes
from fxlens.backend.symbolic_views import strided_view
from fxlens.backend.torch_compat import OpOverload

aten = torch.ops.aten


def is_non_overlapping_and_dense(t) -> bool:
    # symbolic strides are ordered by their hints, then compared as expressions
    pairs = zip(sizes(t.stride()), sizes(t.shape), strict=True)
    dims = sorted(((st, sz) for st, sz in pairs if sz != 1), key=lambda p: (hint(p[0]), hint(p[1])))
    expect = 1
    for st, sz in dims:
        if st != expect:
            return False
        expect *= sz
    return True


def _dense_strides(meta) -> tuple:
    if isinstance(meta, torch.Tensor) and is_non_overlapping_and_dense(meta):
        return sizes(meta.stride())
    return contiguous_strides(sizes(meta.shape))


class GraphLowering:
    """Lowers one ATen graph (forward, backward or inference) to scheduled items."""

    def __init__(
        self, gm: torch.fx.GraphModule, inputs: list, kind: str, fusion: bool, budget: Budget, metas=None
    ):
        self.gm, self.kind, self.fusion, self.budget = gm, kind, fusion, budget
        self.metas = metas
        self.inputs = inputs
        self.env: dict = {}
        self.items: list = []  # SchedNode | Extern, in execution order
        self.fallbacks: Counter = Counter()
        self.static_only: dict[str, str] = {}  # op -> why it is an extern under symbolic sizes
        self.reasons: dict[str, str] = {}  # op -> why it ran as an ATen call (the first reason seen)
        self.dynamic = False  # set by compile_fx for graphs with symbolic sizes
        self.placeholders: list[Buffer | None] = []
        self.outputs: list = []
        self.mutations: list = []
        self.constants: list = []  # (Buffer, tensor) for get_attr nodes
        self.realized: dict[int, Buffer] = {}
        self.keep: list = []
        self.n = 0
        self.uses = self._count_uses()
        self.size_sources: dict = {}  # size symbol name -> wrapper expression computing it
        devices = [t.device for t in inputs if isinstance(t, torch.Tensor)]
        # kernels run on the accelerator when there is one (CPU scalars, e.g. optimizer steps, stay ATen)
        self.device = next(
            (d for d in devices if d.type != "cpu"), devices[0] if devices else torch.device("cpu")
        )

    def meta(self, node):
        if self.metas is not None:
            return self.metas.get(node)
        return node.meta.get("val")

    def _count_uses(self) -> dict:
        uses: dict = {}
        for node in reversed(self.gm.graph.nodes):
            n = 0
            for u in node.users:
                n += uses.get(u, 1) if u.op == "call_function" and u.target in VIEW_OPS else 1
            uses[node] = n
        return uses

    def name(self, prefix: str = "buf") -> str:
        self.n += 1
        return f"{prefix}{self.n - 1}"

    # --- realization ----------------------------------------------------------------------------
    def realize(self, v):
        """Store a lazy value into a new buffer (a scheduled node); buffers are returned as is."""
        if isinstance(v, Buffer) or not isinstance(v, Value):
            return v
        if getattr(v, "alias_of", None) is not None:  # alias/detach/getitem: the same storage
            return self.relabel(self.realize(v.alias_of), v.node)
        if id(v) in self.realized:
            return self.realized[id(v)]
        if getattr(v, "view_of", None) is not None and self.fusion:
            # realize the viewed value in its own shape (so it can stay in its producer's kernel),
            # then view the buffer: a strided reinterpretation, no copy
            base, node, meta, args = v.view_of
            b = self._strided(node, meta, self.realize(base), args)
            if b is not None:
                self.realized[id(v)] = b
                self.keep.append(v)
                return b
        meta = self.meta(v.node) if v.node is not None else None
        item = getattr(v, "item", None)
        if isinstance(meta, (tuple, list)):
            meta = meta[item] if item is not None else None
        ok = isinstance(meta, torch.Tensor) and tuple(meta.shape) == tuple(v.shape) and meta.dtype == v.dtype
        stride = _dense_strides(meta) if ok else contiguous_strides(v.shape)
        buf = Buffer(self.name(), tuple(v.shape), stride, v.dtype, v.device, v.node, item)
        self.items.append(SchedNode(v, buf))
        self.realized[id(v)] = buf
        self.keep.append(v)  # ids stay unique while memoized
        return buf

    def use(self, v, consumer) -> Value:
        """A consumer reads `v`: inline a lazy pointwise producer (a fusion decision) or realize it."""
        if not isinstance(v, Pointwise) or v.cheap:
            return self.realize(v) if isinstance(v, Reduction) else v
        if not self.fusion:
            return self.realize(v)
        a = v.node.name if v.node is not None else "?"
        b = consumer.name if consumer is not None else "?"
        if not self.budget.allowed():
            self.budget.record(False, a, b, "not fused: beyond FXLENS_FUSION_LIMIT")
            return self.realize(v)
        self.budget.record(True, a, b, "fused: pointwise inlined into its only consumer")
        return v

    # --- views ----------------------------------------------------------------------------------
    def view(self, node, meta, x: Value, args, remap):
        shape = sizes(meta.shape)
        if isinstance(x, Buffer):
            b = self._strided(node, meta, x, args)
            if b is not None:
                return b
        if remap is None:
            x = self.realize(x)
            return self._strided(node, meta, x, args)
        base = x

        def fn(ctx, idx):
            return base.load(ctx, remap(idx))

        out = Pointwise(fn, shape, x.dtype, x.device, node, cheap=getattr(x, "cheap", False))
        out.view_of = (base, node, meta, args)
        return out

    def _strided(self, node, meta, x: Buffer, args):
        root = x.base
        if not is_static(*x.shape, *x.stride, x.offset, *sizes(meta.shape)):
            view = strided_view(x, node.target, args, sizes(meta.shape))
            if view is None:
                return None
            shape, stride, offset = view
            return Buffer(root.name, shape, stride, x.dtype, x.device, node, None, offset, root, root.kind)
        t = torch.empty(max(x.storage_numel() + x.offset, 1), dtype=x.dtype, device="meta")
        t = t.as_strided(x.shape, x.stride, x.offset)
        try:
            out = node.target(t, *args)
        except Exception:
            return None
        if not out._is_view():
            return None
        return Buffer(root.name, tuple(out.shape), tuple(out.stride()), x.dtype, x.device, node, None,
                      out.storage_offset(), root, root.kind)  # fmt: skip

    def slice(self, node, meta, x, dim, start, end):
        from fxlens.backend.lower.views import view_remap

        class _N:
            target = aten.slice.Tensor

        args = (dim, start, end, 1)
        if isinstance(x, Buffer):
            b = self._strided(_N, meta, x, args)
            if b is not None:
                return Buffer(
                    b.name, b.shape, b.stride, b.dtype, b.device, node, None, b.offset, b.root, b.kind
                )
        return self.view(node, meta, x, args, view_remap(_N, x, meta, args))

    def view_as(self, buf: Buffer, shape, node, item):
        if not is_static(*buf.shape, *buf.stride, buf.offset, *shape):
            view = strided_view(buf, aten.view.default, (list(shape),), tuple(shape))
            if view is None:
                raise SymbolicUnsupported(f"view of {buf.name} {list(buf.shape)} as {list(shape)}")
            root = buf.base
            return Buffer(
                root.name, view[0], view[1], buf.dtype, buf.device, node, item, view[2], root, root.kind
            )
        t = torch.empty(max(buf.storage_numel() + buf.offset, 1), dtype=buf.dtype, device="meta")
        out = t.as_strided(buf.shape, buf.stride, buf.offset).view(shape)
        root = buf.base
        return Buffer(root.name, tuple(shape), tuple(out.stride()), buf.dtype, buf.device, node, item,
                      out.storage_offset(), root, root.kind)  # fmt: skip

    # --- externs --------------------------------------------------------------------------------
    def extern(self, node, args, kwargs, why: str = "no fxlens lowering"):
        def arg(a):
            return self.realize(a) if isinstance(a, Value) else a

        args = map_aggregate(args, arg)
        kwargs = map_aggregate(kwargs, arg)
        meta = self.meta(node)
        name = self.name()
        multi = isinstance(meta, (tuple, list))
        metas = list(meta) if multi else [meta]
        outs = []
        for i, m in enumerate(metas):
            if isinstance(m, torch.Tensor):
                outs.append(Buffer(f"{name}_{i}" if multi else name, sizes(m.shape),
                                   sizes(m.stride()), m.dtype, m.device, node,
                                   i if multi else None, kind="extern"))  # fmt: skip
            else:
                outs.append(None)
        self.items.append(Extern(name, node, args, kwargs, outs, multi))
        self.fallbacks[str(node.target)] += 1
        self.reasons.setdefault(str(node.target), why)
        return tuple(outs) if multi else outs[0]

    # --- the walk -------------------------------------------------------------------------------
    def run(self) -> None:
        it = iter(self.inputs)
        for node in self.gm.graph.nodes:
            if node.op == "placeholder":
                self.env[node] = self._placeholder(node, next(it))
            elif node.op == "call_function":
                self.env[node] = self._call(node)
            elif node.op == "get_attr":
                self.env[node] = self._constant(node)
            elif node.op == "output":
                self._output(node)
            else:
                raise NotImplementedError(f"fxlens: unsupported FX node {node.op} {node.target}")

    def _constant(self, node):
        t = getattr(self.gm, node.target)
        if not isinstance(t, torch.Tensor):
            return t
        buf = Buffer(f"const{len(self.constants)}", tuple(t.shape), tuple(t.stride()), t.dtype, t.device, node,
                     kind="input")  # fmt: skip
        self.constants.append((buf, t))
        return buf

    def _placeholder(self, node, t):
        i = len(self.placeholders)
        if not isinstance(t, torch.Tensor):
            self.placeholders.append(None)
            if isinstance(t, (torch.SymInt, torch.SymFloat, torch.SymBool)):
                t = size(t)
                self._size_source(t, f"i{i}")
            return t
        buf = Buffer(f"arg{i}", sizes(t.shape), sizes(t.stride()), t.dtype, t.device, node, kind="input")
        for d, s in enumerate(buf.shape):
            self._size_source(s, f"arg{i}.size({d})")
        for d, s in enumerate(buf.stride):
            self._size_source(s, f"arg{i}.stride({d})")
        self.placeholders.append(buf)
        return buf

    def _size_source(self, s, code: str) -> None:
        """Where the wrapper reads a size symbol from (the first input that has it as a size)."""
        if not is_static(s) and s.is_Symbol:
            self.size_sources.setdefault(s.name, code)

    def _call(self, node):
        args = map_aggregate(node.args, lambda a: self.env[a] if isinstance(a, torch.fx.Node) else a)
        kwargs = map_aggregate(node.kwargs, lambda a: self.env[a] if isinstance(a, torch.fx.Node) else a)
        if node.target is operator.getitem:
            return self.relabel(args[0][args[1]], node)
        if node.target == aten.copy_.default and isinstance(args[0], Buffer) and args[0].kind == "input" \
                and args[0].root is None and isinstance(args[1], Value):  # fmt: skip
            self.mutations.append((node, args[0], args[1]))
            return args[0]
        if node.target == aten.sym_size.int:
            return args[0].shape[args[1]]
        if node.target == aten.sym_stride.int and isinstance(args[0], Buffer):
            return args[0].stride[args[1]]
        if node.target == aten.sym_numel.default:
            return numel(args[0].shape)
        if not isinstance(node.target, OpOverload):
            flat = []
            map_aggregate((args, kwargs), flat.append)
            if not any(isinstance(a, Value) for a in flat):
                if isinstance(self.meta(node), (torch.SymInt, torch.SymFloat)):  # torch's own expression
                    return size(self.meta(node))
                if not is_static(*[a for a in flat if not isinstance(a, (str, float, torch.dtype))]):
                    raise SymbolicUnsupported(f"{node.target} on symbolic sizes ({node.name})")
                return node.target(*args, **kwargs)  # symbolic-size arithmetic, now concrete
        meta = self.meta(node)
        fn = LOWERINGS.get(node.target)
        out = None
        leaves: list = []
        map_aggregate((args, kwargs), leaves.append)
        same = all(v.device == self.device for v in leaves if isinstance(v, Value))
        why = "no fxlens lowering" if fn is None else unsupported(meta, leaves)
        if why is None and not (same and self._same_device(meta)):
            why = "a result that is not a tensor, or operands on another device"
        if why is None:
            if not symbolic_ready(fn, leaves) and sees_symbolic_sizes(meta, leaves):
                # written for static sizes (sizes formatted into index text): the op runs as ATen
                why = self.static_only[str(node.target)] = static_only(fn)
            else:
                out, why = self._lower(fn, node, meta, args, kwargs)
        if out is None:
            return self.extern(node, args, kwargs, why)
        if isinstance(out, Pointwise) and not out.cheap and (self.uses.get(node, 0) > 1 or not self.fusion):
            if not self.fusion or (node.target not in VIEW_OPS and not self._recompute(out)):
                out = self.realize(out)
        return out

    def _lower(self, fn, node, meta, args, kwargs):
        """(value, None), or (None, why) when the lowering declines or fails: the node then runs as
        an ATen call (the one boundary where an unsupported case becomes a recorded fallback)."""
        try:
            out = fn(self, node, meta, *args, **kwargs)
        except SymbolicUnsupported:
            raise  # the graph is compiled per shape instead (compile_fx)
        except TypeError:
            if self.dynamic:  # an undecidable size comparison: compile_fx specializes the graph
                raise
            return None, failed(fn, node)
        except Exception:  # noqa: BLE001 - any failure to lower is a fallback, never a user crash
            return None, failed(fn, node)
        return out, (None if out is not None else "lowering declined these arguments")

    def _recompute(self, v: Pointwise) -> bool:
        """A small expression with several users is recomputed in each (saves a store and a load)."""
        from fxlens.backend.codegen import Kernel, generate
        from fxlens.backend.kernel_ctx import Incompatible

        probe = Buffer("probe", v.shape, contiguous_strides(v.shape), v.dtype, v.device)
        n = numel(v.shape)
        try:
            src = generate(
                Kernel([SchedNode(v, probe)], n if not is_static(n) else max(n, 1)), "probe", True, None
            )
        except Incompatible:
            return False
        body = [ln for ln in src.source.split("xmask = xindex < xnumel")[-1].splitlines() if ln.strip()]
        budget = config.recompute_max_ops() * (
            4 if is_static(n) and n <= 1 else 1
        )  # scalars: cheap per program
        return len(body) <= budget and len([p for p in src.params if p.name != "probe"]) <= 3

    def relabel(self, v, node):
        """A tuple element, labelled with its getitem node (what ATen replays and reports see)."""
        if isinstance(v, Buffer):
            return Buffer(v.name, v.shape, v.stride, v.dtype, v.device, node, None, v.offset, v.root, v.kind)
        if isinstance(v, Pointwise):
            inner = v

            def fn(ctx, idx):
                return inner.load(ctx, idx)

            out = Pointwise(fn, v.shape, v.dtype, v.device, node, cheap=v.cheap)
            out.alias_of = inner
            return out
        return v

    def _same_device(self, meta) -> bool:
        metas = meta if isinstance(meta, (tuple, list)) else [meta]
        return all(isinstance(m, torch.Tensor) and m.device == self.device for m in metas)

    def _output(self, node):
        outs = map_aggregate(node.args[0], lambda a: self.env[a] if isinstance(a, torch.fx.Node) else a)
        self.outputs = list(map_aggregate(outs, self.realize))
        # Input mutations last: sources that read a mutated input are realized first, so no later
        # kernel sees a half-updated input.
        pending = []
        for node_, dst, src in self.mutations:
            if isinstance(src, Buffer) and src.base is dst and src.is_full_view():
                continue
            pending.append((node_, dst, src))
        for i, (node_, dst, src) in enumerate(pending):
            if isinstance(src, Pointwise) and not src.cheap:
                pending[i] = (node_, dst, self.realize(src))
        for node_, dst, src in pending:
            self.items.append(SchedNode(_copy_value(node_, dst, src), dst, mutation=True))


def _copy_value(node, dst: Buffer, src: Value) -> Pointwise:
    from fxlens.backend.ir import broadcast_index

    def fn(ctx, idx):
        return ctx.cast(src.load(ctx, broadcast_index(idx, src.shape, dst.shape)), src.dtype, dst.dtype)

    return Pointwise(fn, dst.shape, dst.dtype, dst.device, node)
