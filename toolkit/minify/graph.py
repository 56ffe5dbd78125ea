"""A minify candidate: an FX graph of calls plus the meta of each input, and the edits reduction makes.

Candidates are rebuilt from scratch on every edit (`rebuild`), which also makes them canonical:
placeholders are `arg0, arg1, ...` and every other node is named after its op in creation order,
so two reductions that reach the same graph produce the same source text and the same hash.
"""

from __future__ import annotations

import hashlib
import math
import operator
import re
from dataclasses import dataclass, replace

import torch
import torch.fx as fx

from fxlens.backend.torch_compat import OpOverload, tree_flatten

CALL_OPS = ("call_function", "call_method", "call_module")


@dataclass(frozen=True)
class InputSpec:
    """How to build one input: tensor meta, or a plain Python value for scalar inputs."""

    shape: tuple[int, ...] = ()
    stride: tuple[int, ...] = ()
    dtype: str = "float32"
    device: str = "cpu"
    requires_grad: bool = False
    lo: float = 0  # value range of integer tensors (indices must stay in range)
    hi: float = 1
    saved: str | None = None  # key of a recorded value (only when the check needs real values)
    scalar: object = None  # a non-tensor input (int, float, bool)
    is_tensor: bool = True
    # False: the graph got a non-leaf (the output of earlier autograd ops, e.g. `base * 1.0`); a
    # graph may mutate such an input in place, which a leaf that requires grad refuses
    leaf: bool = True

    @property
    def nbytes(self) -> int:
        if not self.is_tensor:
            return 0
        return math.prod(self.shape) * torch.empty((), dtype=getattr(torch, self.dtype)).element_size()

    def to_json(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}

    @classmethod
    def from_json(cls, d: dict) -> InputSpec:
        d = dict(d)
        d["shape"], d["stride"] = tuple(d.get("shape", ())), tuple(d.get("stride", ()))
        return cls(**d)


def _is_fake(t) -> bool:
    from fxlens.backend import torch_compat

    return torch_compat.is_fake(t)


def spec_of(value, saved: str | None = None) -> InputSpec:
    """The InputSpec of a runtime value (a tensor or a scalar)."""
    if isinstance(value, torch.SymInt):  # dynamic=True: a size Dynamo made symbolic; its real value
        value = value.node.hint
    if not isinstance(value, torch.Tensor):
        return InputSpec(is_tensor=False, scalar=value if isinstance(value, (int, float, bool)) else None)
    lo, hi = 0, 1
    integral = not (value.is_floating_point() or value.is_complex()) and value.dtype != torch.bool
    if integral and value.numel() and not _is_fake(value):  # a fake tensor has no values to range
        lo, hi = int(value.min()), int(value.max())
    return InputSpec(
        shape=tuple(value.shape),
        stride=tuple(value.stride()),
        dtype=str(value.dtype).removeprefix("torch."),
        device=str(value.device),
        requires_grad=bool(value.requires_grad),
        lo=lo,
        hi=hi,
        saved=saved,
        leaf=bool(value.is_leaf) or not value.requires_grad,
    )


@dataclass
class Candidate:
    """A graph (placeholders, then calls, then one output tuple) and one InputSpec per placeholder."""

    graph: fx.Graph
    inputs: list[InputSpec]

    @property
    def num_calls(self) -> int:
        return sum(1 for n in self.graph.nodes if n.op in CALL_OPS)

    @property
    def input_bytes(self) -> int:
        return sum(s.nbytes for s in self.inputs)

    def placeholders(self) -> list[fx.Node]:
        return [n for n in self.graph.nodes if n.op == "placeholder"]

    def outputs(self) -> list[fx.Node]:
        out = next(n for n in self.graph.nodes if n.op == "output")
        return list(out.args[0])

    def calls(self) -> list[fx.Node]:
        return [n for n in self.graph.nodes if n.op in CALL_OPS]

    def forward_source(self) -> str:
        """`def forward(self, arg0, ...)` as Python source."""
        src = self.graph.python_code(root_module="self").src.strip("\n")
        return "\n".join(ln.rstrip() for ln in src.splitlines()).rstrip()

    def key(self) -> str:
        """Canonical hash: the same graph and inputs give the same key (the memo's key)."""
        text = self.forward_source() + repr([s.to_json() for s in self.inputs])
        return hashlib.sha1(text.encode()).hexdigest()


def _base_name(node: fx.Node) -> str:
    t = node.target
    if isinstance(t, str):
        name = t
    elif isinstance(t, OpOverload):
        name = t._schema.name.split("::")[-1]
    else:
        name = getattr(t, "__name__", "v")
    name = re.sub(r"\W+", "_", name).strip("_").lower() or "v"
    return name if not name[0].isdigit() else f"v_{name}"


def tensor_spec(node: fx.Node) -> InputSpec | None:
    """The recorded meta of a node's value when it is one tensor (only those can become inputs)."""
    spec = node.meta.get("fxlens_spec")
    return spec if isinstance(spec, InputSpec) and spec.is_tensor else None


def rebuild(
    cand: Candidate,
    remove: frozenset[str] | set[str] = frozenset(),
    outputs: list[str] | None = None,
    inputs: list[InputSpec] | None = None,
) -> Candidate:
    """A new canonical candidate: nodes named in `remove` become inputs, `outputs` are kept, dead
    code and unused inputs are dropped. `inputs` replaces the specs of the existing placeholders."""
    old_specs = inputs if inputs is not None else cand.inputs
    g = fx.Graph()
    env: dict[fx.Node, fx.Node] = {}
    specs: list[InputSpec] = []
    placeholders = cand.placeholders()
    for n, spec in zip(placeholders, old_specs):
        env[n] = g.placeholder(f"arg{len(specs)}")
        env[n].meta["fxlens_spec"] = spec
        specs.append(spec)
    for n in cand.calls():
        if n.name in remove and (spec := tensor_spec(n)) is not None:
            env[n] = g.placeholder(f"arg{len(specs)}")
            env[n].meta["fxlens_spec"] = spec
            specs.append(spec)
    for n in cand.calls():
        if n in env:
            continue
        new = g.create_node(
            n.op,
            n.target,
            fx.map_arg(n.args, env.__getitem__),
            fx.map_arg(n.kwargs, env.__getitem__),
            name=_base_name(n),
        )
        new.meta["fxlens_spec"] = n.meta.get("fxlens_spec")
        env[n] = new
    keep = cand.outputs() if outputs is None else [n for n in cand.outputs() if n.name in outputs]
    g.output(tuple(env[n] for n in keep))
    # an in-place op whose result nobody reads (`y.add_(1)` on a returned y) is not dead: FX's own
    # rule drops it (it only knows side-effectful functions), and the graph then differs from the
    # one the backend saw
    g.eliminate_dead_code(is_impure_node=_mutates)
    return _compact(g)


def _mutates(n: fx.Node) -> bool:
    from fxlens.minify.fidelity import is_mutation, op_name

    return n.is_impure() or (n.op in ("call_function", "call_method") and is_mutation(op_name(n)))


def _compact(g: fx.Graph) -> Candidate:
    """Copy `g` without its unused placeholders, numbering the rest from arg0 (canonical names)."""
    out_g = fx.Graph()
    env: dict[fx.Node, fx.Node] = {}
    specs: list[InputSpec] = []
    for n in g.nodes:
        if n.op == "placeholder":
            if n.users:
                env[n] = out_g.placeholder(f"arg{len(specs)}")
                env[n].meta["fxlens_spec"] = n.meta["fxlens_spec"]
                specs.append(n.meta["fxlens_spec"])
        elif n.op == "output":
            out_g.output(fx.map_arg(n.args[0], env.__getitem__))
        else:
            env[n] = out_g.create_node(
                n.op,
                n.target,
                fx.map_arg(n.args, env.__getitem__),
                fx.map_arg(n.kwargs, env.__getitem__),
                name=_base_name(n),
            )
            env[n].meta["fxlens_spec"] = n.meta.get("fxlens_spec")
    out_g.lint()
    return Candidate(out_g, specs)


def with_inputs(cand: Candidate, inputs: list[InputSpec]) -> Candidate:
    """The same graph with other input specs (shapes, strides, dtypes)."""
    return rebuild(cand, inputs=inputs)


def halve(spec: InputSpec) -> InputSpec:
    """Every dimension halved (rounding up), strides contiguous."""
    if not spec.is_tensor or not spec.shape:
        return spec
    shape = tuple((d + 1) // 2 if d > 1 else d for d in spec.shape)
    return replace(spec, shape=shape, stride=contiguous_stride(shape))


def contiguous_stride(shape: tuple[int, ...]) -> tuple[int, ...]:
    stride, acc = [], 1
    for d in reversed(shape):
        stride.append(acc)
        acc *= max(d, 1)
    return tuple(reversed(stride))


class _TracedOps:
    """`torch.ops` while tracing captured code: every op call becomes a node, also calls without
    a traced argument (`aten.full`, `aten.scalar_tensor`), which plain tracing would run once and
    bake in as a constant attribute."""

    def __init__(self, tracer: fx.Tracer, obj=None):
        self._tracer, self._obj = tracer, torch.ops if obj is None else obj

    def __getattr__(self, name: str):
        obj = getattr(self._obj, name)
        if isinstance(obj, OpOverload):
            tracer = self._tracer
            return lambda *args, **kwargs: tracer.create_proxy("call_function", obj, args, kwargs)
        return _TracedOps(self._tracer, obj)


class _TracedTorch:
    """`torch.<function>` while tracing captured Dynamo code: a call becomes a node also without
    a traced argument. Plain tracing runs `torch.full(...)`, `torch.arange(...)` once and bakes
    the result, with every in-place write to it (`m[idx] = 0`), into one constant: the graph
    compiled alone then lacks the very ops and mutation the backend failed on
    (pytorch/pytorch#196570: index_put into a mask, then softmax)."""

    def __init__(self, tracer: fx.Tracer):
        self._tracer = tracer

    def __getattr__(self, name: str):
        fn = getattr(torch, name)
        tracer = self._tracer
        return lambda *args, **kwargs: tracer.create_proxy("call_function", fn, args, kwargs)


# torch.<name>( calls in captured code that stay plain calls: types and values, not ops
_PLAIN_TORCH = ("Size", "device", "dtype", "Generator", "SymInt", "SymFloat", "SymBool")


def _traced_torch_calls(source: str) -> str:
    def sub(m: re.Match) -> str:
        name = m.group(1)
        obj = getattr(torch, name, None)
        if name in _PLAIN_TORCH or obj is None or isinstance(obj, type) or not callable(obj):
            return m.group(0)
        return f"fxlens_traced_torch.{name}("

    return re.sub(r"\btorch\.(\w+)\(", sub, source)


class _MutableProxy(fx.Proxy):
    """A proxy that records `t[idx] = v` (Dynamo graphs keep it as `operator.setitem`)."""

    def __setitem__(self, key, value):
        self.tracer.create_proxy("call_function", operator.setitem, (self, key, value), {})


class _Tracer(fx.Tracer):
    def proxy(self, node: fx.Node) -> fx.Proxy:
        return _MutableProxy(node, self)


def load_graph_module(source: str, class_name: str = "CapturedGraph") -> fx.GraphModule:
    """Trace the graph module defined by `source` (captured code, never a pickle) back into FX."""
    tracer = _Tracer()
    namespace: dict = {
        "__name__": "fxlens_captured",
        "fxlens_traced_ops": _TracedOps(tracer),
        "fxlens_traced_torch": _TracedTorch(tracer),
    }
    source = re.sub(r"\btorch\.ops\.", "fxlens_traced_ops.", source)
    source = _traced_torch_calls(source)
    exec(compile(source, "<fxlens captured graph>", "exec"), namespace)
    root = namespace[class_name]()
    return fx.GraphModule(root, tracer.trace(root), class_name)


def candidate_from_module(gm: fx.GraphModule, values: list) -> Candidate:
    """A canonical candidate from a traced graph and its example input values (meta recorded by
    running it once, so a removed node's consumers can read an input of the same meta)."""
    from torch.fx.interpreter import Interpreter

    specs = [spec_of(v, saved=f"arg{i}") for i, v in enumerate(values)]
    _inline_constants(gm)

    class Recorder(Interpreter):
        def run_node(self, n):
            result = super().run_node(n)
            n.meta["fxlens_spec"] = spec_of(result) if isinstance(result, torch.Tensor) else None
            return result

    # with grad on, so a node that becomes an input keeps requires_grad (backward failures need
    # it); without, when grad mode refuses the graph (in-place ops on leaves)
    try:
        try:
            Recorder(gm).run(*values)
        except RuntimeError:
            with torch.no_grad():
                Recorder(gm).run(*values)
    except Exception:
        # the graph raises on its recorded inputs: eager's own error, the very behaviour a
        # "compiled does not raise" report is about. Meta from fake tensors (shapes, strides and
        # dtypes only, no data), which is all a node's spec needs
        _record_fake(Recorder, gm, values)
    for n, spec in zip([n for n in gm.graph.nodes if n.op == "placeholder"], specs):
        n.meta["fxlens_spec"] = spec
    out = next(n for n in gm.graph.nodes if n.op == "output")
    flat, _ = tree_flatten(out.args[0])
    out.args = (tuple(a for a in flat if isinstance(a, fx.Node) and tensor_spec(a) is not None),)
    return rebuild(Candidate(gm.graph, specs))


def _record_fake(recorder, gm: fx.GraphModule, values: list) -> None:
    from fxlens.backend import torch_compat

    with torch.no_grad(), torch_compat.FakeTensorMode(allow_non_fake_inputs=True) as mode:
        fakes = [mode.from_tensor(v) if isinstance(v, torch.Tensor) else v for v in values]
        recorder(gm).run(*fakes)


# largest tensor constant written into a reproducer as a literal (elements)
MAX_INLINE_CONSTANT = 65536


def _inline_constants(gm: fx.GraphModule) -> None:
    """Turn the graph's tensor constants (get_attr nodes) into `torch.tensor(<literal>)` calls.

    Re-tracing a captured graph makes a tensor built inside forward (`torch.tensor([...])`,
    `torch.ones(3)`) a module attribute, `_tensor_constant0`; a candidate is source only, so the
    constant must travel as source too. It stays a constant built inside forward, as in the user's
    code, so the backend sees a graph constant again (a failure may need exactly that).
    """
    from fxlens.errors import FxlensError

    for n in [n for n in gm.graph.nodes if n.op == "get_attr"]:
        value = gm
        for part in str(n.target).split("."):
            value = getattr(value, part)
        if not isinstance(value, torch.Tensor):
            continue
        if value.numel() > MAX_INLINE_CONSTANT:
            raise FxlensError(
                f"tensor constant {n.target} has {value.numel()} elements, more than a reproducer "
                f"embeds ({MAX_INLINE_CONSTANT})"
            )
        kwargs: dict = {"dtype": value.dtype}
        if value.device.type != "cpu":
            kwargs["device"] = str(value.device)
        data = value.detach().cpu().tolist()
        with gm.graph.inserting_before(n):
            call = gm.graph.call_function(torch.tensor, (data,), kwargs)
        n.replace_all_uses_with(call)
        gm.graph.erase_node(n)
    gm.recompile()
