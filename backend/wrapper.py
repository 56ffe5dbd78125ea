"""The generated Python wrapper: allocates buffers, launches kernels in order, calls externs.

The wrapper is plain Python source (logged as `fxlens_wrapper`), executed in a namespace holding the
compiled kernels `K`, the extern ops `E` and non-literal constants `C`.
"""

from __future__ import annotations

import math

import torch

from fxlens.backend.codegen import Kernel
from fxlens.backend.ir import Buffer
from fxlens.backend.items import Extern
from fxlens.backend.symbolic import SymbolicUnsupported, derived, is_static, render, used_symbols


def allocate(shape, stride, dtype, device) -> torch.Tensor:
    """Allocate a buffer for the wrapper (tests replace this to add guard regions)."""
    return torch.empty_strided(shape, stride, dtype=dtype, device=device)


def _alloc(shape, stride, dtype, device):
    return allocate(shape, stride, dtype, device)


def _tup(xs) -> str:
    """A tuple of sizes as wrapper code (symbolic ones computed from the size variables)."""
    return "(" + "".join(render(x) + ", " for x in xs) + ")"


def _view(b: Buffer) -> str:
    if b.is_full_view():
        return b.base.name
    return f"_v({b.base.name}, {_tup(b.shape)}, {_tup(b.stride)}, {render(b.offset - b.base.offset)})"


class _Fmt:
    def __init__(self):
        self.consts: list = []

    def __call__(self, a) -> str:
        if isinstance(a, Buffer):
            return _view(a)
        if not is_static(a):
            return render(a)
        if a is None or isinstance(a, (bool, str)):
            return repr(a)
        if isinstance(a, int):
            return repr(a)
        if isinstance(a, float):
            return repr(a) if math.isfinite(a) else f"float({str(a)!r})"
        if isinstance(a, torch.dtype):
            return str(a)
        if isinstance(a, torch.device):
            return f"torch.device({str(a)!r})"
        if isinstance(a, list):
            return "[" + ", ".join(self(x) for x in a) + "]"
        if isinstance(a, tuple):
            return "(" + "".join(self(x) + ", " for x in a) + ")"
        self.consts.append(a)
        return f"C[{len(self.consts) - 1}]"


def _unbound(source: str, sources: dict) -> list[str]:
    return [s for s in used_symbols(source) if s not in sources]


def build_wrapper(G, items: list, compiled: list, kind: str):
    """Wrapper source and the boxed callable `call(args)` for one compiled graph."""
    fmt = _Fmt()
    externs: list = []
    lines, at_sizes = _prologue(G, items, fmt, kind)
    allocated = {b.name for b in G.placeholders if b is not None} | {b.name for b, _ in G.constants}
    kit = iter(compiled)
    for it in items:
        if isinstance(it, Kernel):
            lines += _launch(it, *next(kit), compiled, allocated)
        else:
            assert isinstance(it, Extern)
            lines += _extern_call(it, fmt, externs, allocated)
    ret = [fmt(o) for o in G.outputs]
    lines.append(f"    return [{', '.join(ret)}]")
    hooked = [c for c, _ in compiled if c.fallback or c.check]
    # sizes derived from the inputs' sizes are known only once the whole body has rendered them
    lines[at_sizes:at_sizes] = _derived_sizes(G, hooked)
    source = "\n".join(lines) + "\n"
    missing = _unbound(source, {**G.size_sources, **dict(derived())})
    if missing:
        raise SymbolicUnsupported(f"size symbols {missing} are not sizes or strides of any input")
    return source, _load(source, G, compiled, externs, fmt.consts, hooked, kind)


def _prologue(G, items: list, fmt: _Fmt, kind: str) -> tuple[list[str], int]:
    """The wrapper's head (inputs unpacked, size symbols, constants, inputs brought to the layout the
    kernels assume), and the line where derived sizes go."""
    mutated = {sn.out.base.name for it in items if isinstance(it, Kernel) for sn in it.nodes if sn.mutation}
    names = [b.name if b is not None else f"i{i}" for i, b in enumerate(G.placeholders)]
    lines = [f"# fxlens wrapper ({kind} graph)", "def call(args):"]
    if names:
        lines.append(f"    ({''.join(n + ', ' for n in names)}) = args")
    lines.append("    args.clear()")
    for sym, code in sorted(G.size_sources.items()):  # the size symbols, from the inputs
        lines.append(f"    {sym} = {code}")
    at_sizes = len(lines)
    for b, t in G.constants:
        fmt.consts.append(t)
        lines.append(f"    {b.name} = C[{len(fmt.consts) - 1}]  # constant")
    for b in G.placeholders:
        if b is not None and b.name not in mutated:
            lines.append(f"    {b.name} = _fix({b.name}, {_tup(b.shape)}, {_tup(b.stride)})")
    return lines, at_sizes


def _launch(k: Kernel, ck, params: list, compiled: list, allocated: set) -> list[str]:
    """A kernel's launch, after allocating the buffers it is the first to write."""
    lines = []
    for sn in k.nodes:
        b = sn.out.base
        if b.name in params and b.name not in allocated:
            allocated.add(b.name)
            lines.append(
                f"    {b.name} = _empty({_tup(b.shape)}, {_tup(b.stride)}, dtype={b.dtype}, device=DEV)"
            )
    idx = len(compiled) and [c for c, _ in compiled].index(ck)
    kargs = ", ".join([*params, *ck.size_args, f"xnumel={render(k.xnumel)}", f"rnumel={render(k.rnumel)}"])
    lines.append(f"    K[{idx}]({kargs})  # {ck.name}")
    return lines


def _extern_call(it: Extern, fmt: _Fmt, externs: list, allocated: set) -> list[str]:
    """An ATen call, its results brought to the layout the kernels after it assume."""
    externs.append(it.node.target)
    call = f"E[{len(externs) - 1}]({', '.join(fmt(a) for a in it.args)}"
    kw = "".join(f", {k}={fmt(v)}" for k, v in it.kwargs.items())
    outs = [o.name if o is not None else "_" for o in it.outs]
    lhs = f"({''.join(o + ', ' for o in outs)})" if it.tuple_out else outs[0]
    lines = [f"    {lhs} = {call}{kw})  # {it.node.target}"]
    for o in it.outs:
        if o is not None:
            allocated.add(o.name)
            lines.append(f"    {o.name} = _fix({o.name}, {_tup(o.shape)}, {_tup(o.stride)})")
    return lines


def _derived_sizes(G, hooked: list) -> list[str]:
    pre = [f"    {name} = {code}" for name, code in derived()]
    size_names = sorted(G.size_sources) + [name for name, _ in derived()]
    if hooked and size_names:  # ATen replays of kernels need every size symbol of the graph
        pre.append(f"    SIZES.update({', '.join(f'{n}={n}' for n in size_names)})")
    return pre


def _load(source: str, G, compiled: list, externs: list, consts: list, hooked: list, kind: str):
    """The wrapper's `call`, executed in the namespace its source names."""
    from fxlens.backend.runtime import fix_layout

    sizes: dict = {}
    for c in hooked:
        c.graph_sizes = sizes
    ns = {
        "SIZES": sizes,
        "torch": torch,
        "K": [c for c, _ in compiled],
        "E": externs,
        "C": consts,
        "DEV": G.device,
        "_empty": _alloc,
        "_fix": fix_layout,
        "_v": lambda t, shape, stride, off: t.as_strided(shape, stride, t.storage_offset() + off),
        "float": float,
    }
    exec(compile(source, f"<fxlens wrapper {kind}>", "exec"), ns)  # noqa: S102 - our generated code
    call = ns["call"]
    call._boxed_call = True
    return call
