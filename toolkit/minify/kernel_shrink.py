"""One launch of an fxlens kernel as reproducer data, and its shrinking to the smallest that fails.

`write_launch` turns a launch (the kernel, a copy of its parameters taken before it ran, its size
arguments) into a `Launch`: the kernel's source, the parameters, eager's fp64 computation of its
ATen nodes as source, and what it writes. `shrink` then cuts the launch's inputs as minify shrinks
shapes: the kernel's nodes become a graph of their own whose inputs are the real values read by
the launch, sliced (every dimension 1 first, then halved while it still fails); fxlens compiles
each cut graph (fxlens bakes sizes into its kernels: a smaller launch is a kernel generated for the
smaller sizes, by the same compiler, with the same switches, FXLENS_INJECT included) and the cut
is kept when one of its kernels fails at the same op.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from fxlens.minify import kernel_writer

MAX_ROUNDS = 32


@dataclass
class Launch:
    """One launch of a generated Triton kernel, with everything its reproducer holds."""

    name: str
    source: str
    params: list  # parameter copies taken before the launch (full storage, as launched)
    sizes: list  # size arguments
    xnumel: int
    rnumel: int
    xblock: int
    rblock: int
    reference: str  # `def reference(p, C)` source
    outputs: list  # (param index, shape, stride, offset, op)
    consts: list = field(default_factory=list)
    inputs: list = field(default_factory=list)  # the shapes of the values read (for the report)
    notes: list = field(default_factory=list)

    def script(self, info: dict) -> str:
        launch = {"name": self.name, "xnumel": self.xnumel, "rnumel": self.rnumel, "XBLOCK": self.xblock,
                  "RBLOCK": self.rblock, "sizes": self.sizes}  # fmt: skip
        return kernel_writer.triton_script(info, self.source, self.reference, self.outputs, launch)

    def tensors(self) -> dict:
        return {"params": self.params, "consts": self.consts}

    def summary(self) -> dict:
        return {
            "xnumel": self.xnumel,
            "rnumel": self.rnumel,
            "inputs": self.inputs,
            "bytes": sum(p.untyped_storage().nbytes() for p in self.params),
        }

    def text(self) -> str:
        grid = (self.xnumel + self.xblock - 1) // self.xblock
        ins = ", ".join(str(s) for s in self.inputs) or "none"
        return (
            f"grid ({grid},), XBLOCK {self.xblock}, RBLOCK {self.rblock}, xnumel {self.xnumel}, "
            f"rnumel {self.rnumel}; values read: {ins}"
        )


def _source_of(ck) -> str:
    fn = getattr(ck.fn, "fn", ck.fn)  # triton's JITFunction wraps the Python function
    with open(fn.__code__.co_filename) as f:  # the kernel cache's file: the whole module
        return f.read()


def user_line(ck) -> str:
    """`file:line  code` of the user's source line of the kernel's first node that has one."""
    for n in ck.replay_nodes:
        st = n.meta.get("stack_trace")
        if not st:
            continue
        lines = [ln for ln in st.rstrip().splitlines() if ln.strip() and set(ln.strip()) != {"^"}]
        last = max((i for i, ln in enumerate(lines) if ln.lstrip().startswith("File ")), default=None)
        if last is None:
            continue
        where = lines[last].strip()
        code = lines[last + 1].strip() if last + 1 < len(lines) else ""
        return f"{where}: {code}"
    return ""


def _stand_in(ck):
    """An input whose value no node reads: its size (a SymInt) or zeros of its shape, as
    `CompiledKernel._eval` sizes it."""
    from fxlens.backend.symbolic import evaluate, size

    def stand_in(node, a) -> str:
        v = a.meta.get("val")
        env = ck._env()
        if isinstance(v, torch.SymInt):
            return repr(evaluate(size(v), env))
        if isinstance(v, torch.Tensor):
            shape = tuple(evaluate(size(s), env) for s in v.shape)
            return f"torch.zeros({shape}, dtype={v.dtype}, device=DEV)"
        raise kernel_writer.Unwritable(f"{node.name} needs {a.name}, which the launch does not hold")

    return stand_in


def write_launch(ck, snap: list, sizes: list, xnumel: int, rnumel: int) -> Launch:
    """A launch of `ck` (a `fxlens.backend.runtime.CompiledKernel`) as reproducer data."""
    from fxlens.backend.symbolic import evaluate, size

    env = ck._env()
    boundary = []
    for node, item, pi, shape, stride, off in ck.boundary:
        shape, stride, off = ck._layout(shape, stride, off)
        boundary.append((node, item, pi, shape, stride, off))
    nodes, missing, consts = kernel_writer.node_closure(
        ck.replay_nodes, {b[0] for b in boundary}, _stand_in(ck)
    )
    ints = lambda s: evaluate(size(s), env)  # noqa: E731
    ref = kernel_writer.reference_source(
        nodes, boundary, [(n, item) for _pi, n, item, *_ in ck.outputs], consts, ints, missing
    )
    outputs = []
    for pi, node, _item, shape, stride, off in ck.outputs:
        shape, stride, off = ck._layout(shape, stride, off)
        outputs.append((pi, tuple(shape), tuple(stride), off, str(node.target) if node is not None else "?"))
    inputs = [list(b[3]) for b in boundary if b[0] not in set(nodes)]
    return Launch(ck.name, _source_of(ck), list(snap), list(sizes), int(xnumel), int(rnumel), ck.xblock,
                  ck.rblock, ref, outputs, consts, inputs)  # fmt: skip


# -- shrinking -----------------------------------------------------------------------------------


def _kernel_graph(ck, values: list):
    """The kernel's nodes as a graph of their own: (GraphModule, its input values), or None when
    the kernel needs more than the values it reads (stand-ins, multi-output inputs, constants)."""
    inside = set(ck.replay_nodes)
    reads = [(n, item, v) for (n, item, *_), v in zip(ck.boundary, values) if n not in inside]
    if any(item is not None for _n, item, _v in reads):
        return None
    g = torch.fx.Graph()
    env: dict = {}
    inputs = []
    for n, _item, v in reads:
        if n in env:
            continue
        env[n] = g.placeholder(n.name)
        inputs.append(v)
    for n in ck.replay_nodes:
        if any(a not in env for a in n.all_input_nodes):
            return None
        env[n] = g.node_copy(n, lambda a: env[a])
    outs = [env[n] if item is None else None for _pi, n, item, *_ in ck.outputs]
    if any(o is None for o in outs):
        return None
    g.output(tuple(outs))
    return torch.fx.GraphModule(torch.nn.Module(), g), inputs


def _read_values(ck, snap: list) -> list:
    """The values the launch read, as tensors of their own (contiguous copies)."""
    vals = []
    for _n, _item, pi, shape, stride, off in ck.boundary:
        shape, stride, off = ck._layout(shape, stride, off)
        a = snap[pi]
        vals.append(a.as_strided(shape, stride, a.storage_offset() + off).clone())
    return vals


def _cut(t: torch.Tensor, how: str) -> torch.Tensor:
    if how == "ones":
        return t[tuple(slice(0, 1) for _ in t.shape)].clone()
    return t[tuple(slice(0, (d + 1) // 2) for d in t.shape)].clone()


def _metas(gm, inputs) -> dict:
    """Each node's value on fake copies of `inputs` (the cut sizes), as compile_aten reads them."""
    from fxlens.backend.torch_compat import FakeTensorMode

    mode = FakeTensorMode(allow_non_fake_inputs=True)
    fakes = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in inputs]
    metas: dict = {}

    class _Record(torch.fx.Interpreter):
        def run_node(self, n):
            metas[n] = super().run_node(n)
            return metas[n]

    with mode:
        _Record(gm).run(*fakes)
    return metas


class _Probe:
    """Compile a cut kernel graph with fxlens and launch it: its failing launch, if any."""

    def __init__(self, ck, op: str, h: dict, fusion: bool):
        self.ck, self.op, self.h, self.fusion = ck, op, h, fusion
        self.tries = 0

    def __call__(self, gm, inputs) -> Launch | None:
        from fxlens.backend.compile_fx import compile_aten

        self.tries += 1
        try:
            gm(*[x.double() if x.is_floating_point() else x for x in inputs])  # the cut must make sense
            call = compile_aten(gm, list(inputs), self.ck.graph, self.fusion, _metas(gm, inputs))
        except Exception:
            return None
        found: list = []
        kernels = call.__globals__["K"]
        for i, k in enumerate(list(kernels)):
            kernels[i] = self._watch(k, found)
        try:
            call(list(inputs))
        except Exception:
            return None
        return found[0] if found else None

    def _watch(self, k, found: list):
        def launch(*args, xnumel, rnumel):
            n = len(args) - len(k.size_args)
            snap = [self.h["_snap"](a) for a in args[:n]]
            k(*args, xnumel=xnumel, rnumel=rnumel)
            if found or not k.replayable:
                return
            try:
                ref = k.replay([self.h["_snap"](s) for s in snap], fp64=True)
            except Exception:
                return
            for (pi, node, _item, shape, stride, off), r in zip(k.outputs, ref, strict=True):
                shape, stride, off = k._layout(shape, stride, off)
                got = args[pi].as_strided(shape, stride, args[pi].storage_offset() + off)
                if not self.h["compare"](got, r)[0] and str(getattr(node, "target", "")) == self.op:
                    found.append(write_launch(k, snap, list(args[n:]), xnumel, rnumel))
                    return

        return launch


def shrink(ck, launch: Launch, h: dict, fusion: bool = True) -> Launch | None:
    """The smallest cut of `launch`'s inputs whose compiled kernel still fails at the same op, or
    None when no cut fails (or the kernel's nodes cannot stand alone)."""
    first = next((o[4] for o in launch.outputs), None)
    built = _kernel_graph(ck, _read_values(ck, launch.params))
    if built is None or first is None:
        launch.notes.append("not shrunk: the kernel's nodes need values besides those it reads")
        return None
    gm, values = built
    # the op of the first failing output: the signature every cut must keep
    op = _failing_op(ck, launch, h) or first
    probe = _Probe(ck, op, h, fusion)
    best: Launch | None = None
    ones = [_cut(v, "ones") for v in values]
    got = probe(gm, ones)
    if got is not None:
        best, values = got, ones
    else:
        for _ in range(MAX_ROUNDS):
            trial = [_cut(v, "half") for v in values]
            if [t.shape for t in trial] == [v.shape for v in values]:
                break
            got = probe(gm, trial)
            if got is None:
                break
            best, values = got, trial
        for _ in range(MAX_ROUNDS):  # then each input alone
            progress = False
            for i, v in enumerate(values):
                t = _cut(v, "half")
                if t.shape == v.shape:
                    continue
                trial = [*values[:i], t, *values[i + 1 :]]
                got = probe(gm, trial)
                if got is not None:
                    best, values, progress = got, trial, True
            if not progress:
                break
    if best is None:
        launch.notes.append(f"not shrunk: no cut of the inputs fails ({probe.tries} tried)")
        return None
    best.notes.append(
        f"shrunk from a launch over {launch.xnumel} x {launch.rnumel} elements (values read: "
        f"{', '.join(str(s) for s in launch.inputs)}) to the first elements of each input, the "
        f"smallest cut that still fails ({probe.tries} cuts compiled and launched); fxlens bakes "
        f"sizes into its kernels, so this kernel is the one fxlens generates for the cut sizes "
        f"(original kernel {ck.name}: {_source_path(ck)})"
    )
    return best


def _source_path(ck) -> str:
    fn = getattr(ck.fn, "fn", ck.fn)
    return fn.__code__.co_filename


def _failing_op(ck, launch: Launch, h: dict) -> str | None:
    """The op of the first output the original launch got wrong (re-launched on its copies)."""
    params = [h["_snap"](p) for p in launch.params]
    ref = ck.replay([h["_snap"](p) for p in launch.params], fp64=True)
    ck.fn[((launch.xnumel + launch.xblock - 1) // launch.xblock,)](
        *params, *launch.sizes, launch.xnumel, launch.rnumel, XBLOCK=launch.xblock, RBLOCK=launch.rblock
    )
    for (pi, shape, stride, off, op), r in zip(launch.outputs, ref, strict=True):
        got = params[pi].as_strided(shape, stride, params[pi].storage_offset() + off)
        if not h["compare"](got, r)[0]:
            return op
    return None
