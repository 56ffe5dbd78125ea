"""The child side of `fxlens minify --kernel` for inductor's C++ kernels: catch the failing one.

Inductor names each kernel when it defines it (`CppScheduling.define_kernel`): there, with its
graph being lowered, each kernel argument is known as buffers (`KernelArgs`: inputs, outputs,
in-place), each buffer as the post-grad FX node whose value it holds (graph inputs by name, others
by their `origin_node`), and the kernel's own nodes as its scheduler nodes' origins. When the
output code module is loaded (`PyCodeCache.load_by_key_path`) each kernel it defines is replaced by
a watcher: the arguments are copied before the call and, after it, what the kernel wrote is
compared with its post-grad nodes evaluated in float64 on the copies (the reproducer's helpers).
A module that fails to load (a C++ compile error) is searched for the kernel that does not compile.

The reproducer loads the kernel as the output code does (`AsyncCompile().cpp_pybinding`) and calls
it with the line of inductor's wrapper that launches it. Inductor's Triton kernels (CUDA) are not
caught yet: this needs a GPU to build and test.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass, field
from pathlib import Path

import torch

from fxlens.minify import kernel_writer


@dataclass
class CppKernel:
    """What inductor knew about one C++ kernel when it defined it."""

    name: str
    roles: list  # per call argument: (role in|out|inout|size, node read or None, node written or None)
    nodes: list  # the kernel's post-grad FX nodes, in graph order
    graph: str
    compile_id: str | None
    ops: list = field(default_factory=list)


def _node_of(V, name: str):
    """The post-grad FX node whose value buffer `name` holds, or None."""
    g = V.graph
    if name in g.graph_inputs:
        for n in g.module.graph.nodes:
            if n.op == "placeholder" and (n.target == name or n.name == name):
                return n
        return None
    try:
        buf = g.get_buffer(name)
    except Exception:
        return None
    node = getattr(buf, "origin_node", None)
    if node is None:
        data = getattr(buf, "data", None)
        node = getattr(data, "origin_node", None)
    return node


def describe(name: str, nodes, args) -> CppKernel:
    """A kernel's arguments in `KernelArgs.cpp_argdefs` order, each with the nodes it holds."""
    from fxlens.backend.torch_compat import current_compile_id, resolve

    V = resolve("inductor_V")
    roles = []
    inplace = args.inplace_buffers
    seen: dict = {}
    for inplaced in inplace.values():  # utils.unique: first occurrence of each object
        seen.setdefault(id(inplaced), inplaced)
    for inplaced in seen.values():
        if type(inplaced).__name__ == "RemovedArg":
            continue
        names = inplaced.other_names
        roles.append(("inout", _node_of(V, names[0]), _node_of(V, names[-1])))
    for outer in args.input_buffers:
        if outer in inplace:
            continue
        roles.append(("in", _node_of(V, outer), None))
    for outer, inner in args.output_buffers.items():
        if outer in inplace or type(inner).__name__ == "RemovedArg":
            continue
        roles.append(("out", None, _node_of(V, outer)))
    for _outer in args.sizevars:
        roles.append(("size", None, None))
    origins: set = set()
    for sn in nodes:
        for n in sn.get_nodes() if hasattr(sn, "get_nodes") else [sn]:
            ir_node = getattr(n, "node", None)
            if ir_node is not None:
                origins |= set(ir_node.get_origins())
    graph_nodes = list(V.graph.module.graph.nodes)
    order = {n: i for i, n in enumerate(graph_nodes)}
    calls = sorted((n for n in origins if n in order and n.op == "call_function"), key=order.__getitem__)
    kind = "backward" if getattr(V.graph, "is_backward", False) else "forward"
    if getattr(V.graph, "is_inference", False):
        kind = "inference"
    cid = current_compile_id()
    ops = list(dict.fromkeys(str(n.target) for n in calls))
    return CppKernel(name, roles, calls, kind, str(cid) if cid is not None else None, ops)


def kernel_block(source: str, name: str) -> str | None:
    """`NAME = async_compile.cpp_pybinding([...], r'''...''')` as the output code defines it."""
    m = re.search(rf"^{re.escape(name)} = async_compile\.cpp_pybinding\(.*?^'''\)$", source, re.M | re.S)
    return m.group(0) if m else None


def launch_line(source: str, name: str) -> str | None:
    """The line of the output code's `call` that launches kernel NAME."""
    m = re.search(rf"^\s*{re.escape(name)}\((.*)\)\s*$", source, re.M)
    return m.group(0).strip() if m else None


class InductorCatcher:
    """Watches inductor's C++ kernels for the parent `Catcher` (shared status and output folder)."""

    def __init__(self, parent):
        self.parent = parent
        self.pending: dict[str, CppKernel | None] = {}  # None: seen, but not watchable

    def install(self) -> None:
        from fxlens.capture.imports import when_imported

        when_imported("torch._inductor.codegen.cpp", self._patch_codegen)
        when_imported("torch._inductor.codecache", self._patch_loader)

    # -- inductor hooks ------------------------------------------------------------------------
    def _patch_codegen(self, _module) -> None:
        from fxlens.backend.torch_compat import resolve

        cls = resolve("CppScheduling")
        original = cls.define_kernel
        catcher = self

        def define_kernel(sched, src_code, nodes, kernel_args=None):
            name = original(sched, src_code, nodes, kernel_args)
            if name in catcher.pending:  # the same source twice (inductor reuses the kernel): its
                catcher.pending[name] = None  # arguments differ per call site; not watched
                return name
            try:  # a diagnostic: never in the way of the compile
                args = sched.kernel_group.args if kernel_args is None else kernel_args
                catcher.pending[name] = describe(name, nodes, args)
            except Exception:
                catcher.pending[name] = None
            return name

        cls.define_kernel = define_kernel

    def _patch_loader(self, _module) -> None:
        from fxlens.backend.torch_compat import resolve

        cache = resolve("PyCodeCache")
        original = cache.load_by_key_path.__func__
        catcher = self

        def load_by_key_path(cls, key, path, *args, **kwargs):
            pending, catcher.pending = catcher.pending, {}
            try:
                mod = original(cls, key, path, *args, **kwargs)
            except Exception as e:
                if pending and not catcher.parent.done:
                    catcher.compile_failed(pending, path, e)
                raise
            for name, info in pending.items():
                k = mod.__dict__.get(name)
                if info is not None and callable(k):
                    mod.__dict__[name] = catcher.watch(info, k, path)
            return mod

        cache.load_by_key_path = classmethod(load_by_key_path)

    # -- launches ------------------------------------------------------------------------------
    def watch(self, info: CppKernel, kernel, path: str):
        catcher, parent = self, self.parent

        def launch(*args):
            parent.seen.add(info.name)
            if parent.done or (parent.name and info.name != parent.name):
                return kernel(*args)
            n = parent.launches[info.name] = parent.launches.get(info.name, 0) + 1
            snap = [parent.h["_snap"](a) if isinstance(a, torch.Tensor) else a for a in args]
            if parent.crash_at == (info.name, n):  # it ended the first run: written before it runs
                parent.write_cpp(info, path, snap, None, crash=True)
                return kernel(*args)
            # said before it runs: a launch that ends the process is named by the parent, which
            # then runs the script again to write it (a signal leaves this process nothing to do)
            parent.status(found=False, inflight={"kernel": info.name, "launch": n})
            result = kernel(*args)
            try:
                failure, ref = catcher.check(info, snap, args)
            except Exception as e:  # no reference to compare with: unchecked, never "agrees"
                failure = None
                parent.unchecked.setdefault(info.name, f"{type(e).__name__}: {str(e)[:160]}")
            if failure:
                parent.write_cpp(info, path, snap, failure)
            elif not parent.done:
                parent.status(found=False)
            return result

        return launch

    def check(self, info: CppKernel, snap: list, args) -> tuple[dict | None, list]:
        """The first output that differs from the fp64 reference, and the reference."""
        fn, outs = reference_of(info, snap)
        ref = fn([self.parent.h["_snap"](s) if isinstance(s, torch.Tensor) else s for s in snap], [])
        for i, ((pos, shape, stride, off, op), r) in enumerate(zip(outs, ref, strict=True)):
            got = args[pos].as_strided(shape, stride, args[pos].storage_offset() + off)
            ok, err, at, g, rv, _tol = self.parent.h["compare"](got, r)
            if not ok:
                return kernel_writer.mismatch(i, op, err, at, g, rv), ref
        return None, ref

    def compile_failed(self, pending: dict, path: str, error: Exception) -> None:
        """Find which kernel of a module that failed to load does not compile; write it."""
        try:
            source = Path(path).read_text()
        except OSError:
            return
        for name, info in pending.items():
            block = kernel_block(source, name)
            if block is None or info is None:
                continue
            ns: dict = {}
            try:
                exec(  # noqa: S102 - inductor's own output code, one kernel of it
                    "from torch._inductor.async_compile import AsyncCompile\n"
                    f"async_compile = AsyncCompile()\n{block}\nasync_compile.wait(globals())\n",
                    ns,
                )
            except Exception as e:
                if type(e).__name__ == type(error).__name__ or type(e).__name__ in str(error):
                    self.parent.write_cpp_compile_error(info, block, e)
                    return


def _layout_for(node, t: torch.Tensor) -> tuple:
    """(shape, stride, offset) viewing buffer `t` as `node`'s value (a reused buffer may be
    allocated with another shape of as many elements)."""
    val = node.meta.get("val")
    if not isinstance(val, torch.Tensor) or tuple(val.shape) == tuple(t.shape):
        return tuple(t.shape), tuple(t.stride()), 0
    if val.numel() != t.numel() or not t.is_contiguous():
        raise kernel_writer.Unwritable(
            f"buffer for {node.name} has shape {list(t.shape)}, not {list(val.shape)}"
        )
    shape = tuple(int(s) for s in val.shape)
    stride, acc = [], 1
    for d in reversed(shape):
        stride.append(acc)
        acc *= max(d, 1)
    return shape, tuple(reversed(stride)), 0


def reference_parts(info: CppKernel, snap: list) -> tuple[str, list, list]:
    """(`reference` source, outputs as (arg, shape, stride, offset, op), constants)."""
    boundary = []
    read = set()
    for pos, (role, rnode, _w) in enumerate(info.roles):
        if role in ("in", "inout") and rnode is not None and isinstance(snap[pos], torch.Tensor):
            shape, stride, off = _layout_for(rnode, snap[pos])
            boundary.append((rnode, None, pos, shape, stride, off))
            read.add(rnode)
    nodes, missing, consts = kernel_writer.node_closure(_with_items(info), read, _no_stand_in)
    outputs, out_nodes = [], []
    inside = set(nodes)
    for pos, (role, _r, wnode) in enumerate(info.roles):
        if role in ("out", "inout") and wnode is not None and wnode in inside:
            shape, stride, off = _layout_for(wnode, snap[pos])
            outputs.append((pos, shape, stride, off, _op_name(wnode)))
            out_nodes.append((wnode, None))
    if not outputs:
        raise kernel_writer.Unwritable(f"{info.name}: no output buffer maps to one of its FX nodes")
    ints = lambda s: int(s)  # noqa: E731 - inductor's CPU kernels here are static
    src = kernel_writer.reference_source(nodes, boundary, out_nodes, consts, ints, missing)
    return src, outputs, consts


def _op_name(node) -> str:
    """`aten.max.dim[1]` for the getitem of a tuple-valued op, else the node's target."""
    if node.target is operator.getitem and isinstance(node.args[0], torch.fx.Node):
        return f"{node.args[0].target}[{node.args[1]}]"
    return str(node.target)


def _with_items(info: CppKernel) -> list:
    """The kernel's nodes and the `getitem`s of them it writes: a kernel computing a tuple-valued
    op (`max.dim`: values and int64 indices) writes each item to its own buffer, whose origin is
    the getitem, not the op."""
    own = set(info.nodes)
    items = [
        w
        for role, _r, w in info.roles
        if role in ("out", "inout") and w is not None and w not in own
        and w.target is operator.getitem and w.args and w.args[0] in own
    ]  # fmt: skip
    return list(info.nodes) + list(dict.fromkeys(items))


def reference_of(info: CppKernel, snap: list):
    src, outputs, consts = reference_parts(info, snap)
    ns = {**kernel_writer.helpers_cache(), "operator": __import__("operator"), "DEV": "cpu"}
    exec(compile(src, f"<reference {info.name}>", "exec"), ns)  # noqa: S102 - our own rendering
    return (lambda p, _c: ns["reference"](p, consts)), outputs


def _no_stand_in(node, a):
    raise kernel_writer.Unwritable(f"{node.name} needs {a.name}, which the kernel does not read")


def cpp_sources(info: CppKernel, path: str) -> tuple[str, str]:
    """(the kernel's definition block, the wrapper line that launches it) from the output code."""
    source = Path(path).read_text()
    block = kernel_block(source, info.name)
    line = launch_line(source, info.name)
    if block is None:
        raise kernel_writer.Unwritable(f"{info.name}: no cpp_pybinding definition in {path}")
    return block, line or f"{info.name}(*args)"
