"""The full pipeline: AOTAutograd -> lowering -> fusion -> Triton codegen -> wrapper -> launch.

`compile_graph` is what the `fxlens` and `fxlens_nofusion` backends call. Each ATen graph that
AOTAutograd hands us (forward, backward, inference) is compiled by `compile_aten`, which logs the
artifacts the toolkit's report reads (see trace_log): `fxlens_aten_<graph>_graph`, `fxlens_ir`,
`fxlens_fusion`, `fxlens_kernel` (one per kernel), `fxlens_fallbacks`, `fxlens_wrapper`.
Graphs with symbolic sizes are compiled once with the sizes as kernel arguments (see symbolic.py);
those the compiler cannot express are compiled per input shape (`fxlens_dynamic_fallback` says why).
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import torch

from fxlens.backend import config
from fxlens.backend.codegen import Kernel, generate, persistent
from fxlens.backend.fallback import raised_at
from fxlens.backend.graph import GraphLowering
from fxlens.backend.ir import Reduction
from fxlens.backend.items import Budget, Extern
from fxlens.backend.lower.aot import aot_options
from fxlens.backend.runtime import op_name
from fxlens.backend.scheduler import schedule
from fxlens.backend.symbolic import SymbolicUnsupported, bind, hint, hints_of, is_static
from fxlens.backend.torch_compat import FakeTensorMode, aot_module_simplified, current_compile_id
from fxlens.backend.trace_log import for_compile, log_artifact, log_json
from fxlens.backend.wrapper import build_wrapper

# The most recent compiled graphs (kind, kernels, fallbacks, decisions): for tests and benchmarks.
COMPILED: collections.deque = collections.deque(maxlen=64)
# Graphs with symbolic sizes that fell back to per-shape specialization: {graph, reason}.
DYNAMIC_FALLBACKS: collections.deque = collections.deque(maxlen=64)


def compile_graph(
    gm: torch.fx.GraphModule, example_inputs: Sequence[Any], fusion: bool | str = True
) -> Callable:
    """Compile a Dynamo graph with AOTAutograd (min-cut partition) and fxlens's Triton codegen;
    `fusion` True, False, or "inline" (producers inlined into consumers, no kernels merged)."""
    traces = {n.name: n.meta["stack_trace"] for n in gm.graph.nodes if n.meta.get("stack_trace")}
    return aot_module_simplified(
        gm,
        example_inputs,
        fw_compiler=_compiler("forward", fusion, traces),
        bw_compiler=_compiler("backward", fusion, traces),
        inference_compiler=_compiler("inference", fusion, traces),
        **aot_options(),
    )


def _is_dynamic(inputs) -> bool:
    for a in inputs:
        if isinstance(a, torch.SymInt):
            return True
        if isinstance(a, torch.Tensor) and any(isinstance(s, torch.SymInt) for s in (*a.shape, *a.stride())):
            return True
    return False


def _compiler(kind: str, fusion: bool, traces: dict | None = None) -> Callable:
    def compiler(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable:
        log_artifact(f"aten_{kind}_graph", lambda: gm.print_readable(print_output=False))
        for n in gm.graph.nodes:  # the user's source line, from the Dynamo node it came from
            if not n.meta.get("stack_trace") and traces:
                st = next((traces[s] for s in _sources(n) if s in traces), None)
                if st:
                    n.meta["stack_trace"] = st
        if _is_dynamic(example_inputs):
            try:  # once, with symbolic sizes: kernels and wrapper take the sizes at run time
                return compile_aten(gm, list(example_inputs), kind, fusion, dynamic=True)
            except SymbolicUnsupported as e:
                return _Specializing(gm, kind, fusion, str(e))
            except TypeError as e:  # a size comparison sympy cannot decide: a gap in the lowering
                return _Specializing(gm, kind, fusion, f"{e} (at {raised_at(e)})")
        return compile_aten(gm, list(example_inputs), kind, fusion)

    return compiler


class _Specializing:
    """The fallback for symbolic sizes the compiler cannot express: compile once per concrete input
    signature seen at run time (sizes baked in). Why is logged (`fxlens_dynamic_fallback`)."""

    _boxed_call = True

    def __init__(self, gm, kind, fusion, reason: str):
        self.gm, self.kind, self.fusion, self.cache = gm, kind, fusion, {}
        self.reason = reason
        DYNAMIC_FALLBACKS.append({"graph": kind, "reason": reason})
        log_json(
            "dynamic_fallback", {"graph": kind, "reason": reason, "action": "specialize per input shape"}
        )
        # run-time compiles happen outside Dynamo's compile: keep its id for their artifacts
        self.compile_id = current_compile_id()

    def __call__(self, args):
        key = tuple(
            (tuple(a.shape), tuple(a.stride()), a.dtype, a.device.type) if isinstance(a, torch.Tensor) else a
            for a in args
        )
        fn = self.cache.get(key)
        if fn is None:
            with for_compile(self.compile_id):
                fn = self.cache[key] = compile_aten(
                    self.gm, list(args), self.kind, self.fusion, _concrete_metas(self.gm, args)
                )
        return fn(args)


def _concrete_metas(gm, args) -> dict:
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    fakes = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args]
    metas: dict = {}

    class _Rec(torch.fx.Interpreter):
        def run_node(self, n):
            r = super().run_node(n)
            metas[n] = r
            return r

    with mode:
        _Rec(gm).run(*fakes)
    return metas


def _sources(node) -> list[str]:
    names, stack = [], list(node.meta.get("from_node") or [])
    while stack:
        src = stack.pop(0)
        names.append(getattr(src, "name", ""))
        stack.extend(getattr(src, "from_node", None) or [])
    return names


def _user_line(node) -> str:
    st = node.meta.get("stack_trace") if node is not None else None
    if not st:
        return ""
    lines = [ln for ln in st.rstrip().splitlines() if ln.strip() and set(ln.strip()) != {"^"}]
    last = max((i for i, ln in enumerate(lines) if ln.lstrip().startswith("File ")), default=len(lines) - 1)
    return "\nUser source:\n" + "\n".join(lines[last : last + 2])


def _node_msg(node, op: str) -> str:
    return f" (op {op}, FX node {node.name})\nWhile executing {node.format_node()}{_user_line(node)}"


def _blocks(k: Kernel, whole_rows: bool, cuda: bool, rmax: int) -> tuple[int, int]:
    """XBLOCK/RBLOCK; symbolic numels are taken at their hints (any block size is correct: loads
    and stores are masked, and a symbolic row length is always reduced in a loop)."""
    import triton

    p2 = triton.next_power_of_2
    cap = 4096 if cuda else config.max_block()
    xn, rn = hint(k.xnumel), hint(k.rnumel)
    if not k.is_reduction:
        return (1024 if cuda else min(p2(max(xn, 1)), cap)), 1
    # a looped row takes blocks of at most RMAX (rounded down to a power of 2); a symbolic row
    # length loops with blocks sized for its hint (a loop is correct for any length)
    looped = max(1, 1 << (max(rmax, 1).bit_length() - 1))
    r = p2(max(rn, 1)) if whole_rows else min(max(p2(max(rn, 1)), 128 if cuda else 1), looped)
    x = max(1, min(p2(max(xn, 1)), max(cap // r, 1)))
    return x, r


def compile_aten(
    gm: torch.fx.GraphModule, inputs: list, kind: str, fusion: bool, metas: dict | None = None, dynamic=False
):
    """Compile one ATen graph to a boxed callable `call(args)` (a generated wrapper).

    dynamic: `inputs` carry symbolic sizes (SymInts) and the result serves every size."""
    with bind(hints_of(inputs) if dynamic else {}):
        return _compile_aten(gm, inputs, kind, fusion, metas, dynamic)


def _compile_aten(gm, inputs, kind, fusion, metas, dynamic):
    inject = config.inject()
    rmax = config.persistent_rmax()
    budget = Budget(config.fusion_limit() if fusion else None)
    G = GraphLowering(gm, inputs, kind, bool(fusion), budget, metas)
    G.dynamic = dynamic
    G.run()
    ir_dump = _ir_dump(G, rmax)
    # fusion "inline": pointwise producers inlined into their consumers, no kernels merged after
    items = schedule(G.items, fusion is True, budget, rmax)
    kernels = [it for it in items if isinstance(it, Kernel)]
    outside, probes = _read_outside(items, G.outputs, kernels, rmax)
    order = {n: i for i, n in enumerate(gm.graph.nodes)}
    job = _Job(kind, order, rmax, G.device.type == "cuda", inject, config.kernel_fallback(), outside)
    compiled, records = [], []
    for i, k in enumerate(kernels):
        ck, params, record = _compile_kernel(job, i, k, probes[id(k)])
        compiled.append((ck, params))
        records.append(record)
    source, call = build_wrapper(G, items, compiled, kind)
    _log_graph(G, budget, ir_dump, records, source)
    _describe(call, G, budget, items, records, source, dynamic)
    COMPILED.append(call)
    call.kind = kind
    return call


class _Job(NamedTuple):
    """What compiling each kernel of one graph needs from the graph."""

    kind: str
    order: dict  # FX node -> its position in the graph
    rmax: int
    cuda: bool
    inject: config.Inject | None
    fallback: frozenset  # FXLENS_KERNEL_FALLBACK's entries
    outside: dict  # buffer name -> its readers outside the kernel that writes it


def _read_outside(items, outputs, kernels, rmax) -> tuple[dict, dict]:
    """Who reads each buffer (externs, the graph's outputs, kernels: a kernel must store what
    anyone else reads), and each kernel's probe generation that tells what it loads."""
    outside: dict[str, set] = {}
    for it in items:
        if isinstance(it, Extern):
            for r in it.reads:
                outside.setdefault(r, set()).add(id(it))
    for o in outputs:
        for b in _buffers(o):
            outside.setdefault(b.base.name, set()).add("out")
    probes = {}
    for k in kernels:
        probes[id(k)] = generate(k, "probe", persistent(k, rmax), None)
        for r in probes[id(k)].loaded:
            outside.setdefault(r, set()).add(id(k))
    return outside, probes


def _compile_kernel(job: _Job, i: int, k: Kernel, probe) -> tuple:
    """Name, generate and load kernel `i`: (its launcher, its buffer parameters, its log record)."""
    from fxlens.backend.runtime import load_kernel

    inject = job.inject
    nodes = sorted((n for n in probe.closure if n.op == "call_function"), key=job.order.__getitem__)
    named = [n for n in nodes if "getitem" not in str(n.target)]
    ops = [str(n.target) for n in named]
    summary = "_".join(dict.fromkeys(op_name(n) for n in named))
    k.name = f"fxk_{job.kind}_{i}_{'_'.join(summary.split('_')[:3]) or 'copy'}"
    hit = _inject_hit(inject, named)
    if inject is not None and inject.kind == "compile_error" and hit is not None:
        raise RuntimeError(f"fxlens: injected compile_error compiling kernel {k.name}{_node_msg(*hit)}")
    needed = {r for r, users in job.outside.items() if users - {id(k)}}
    whole_rows = persistent(k, job.rmax)
    src = generate(
        k,
        k.name,
        whole_rows,
        needed,
        perturb=inject is not None and inject.kind == "accuracy" and hit is not None,
    )
    fn, path = load_kernel(src.source, k.name, interpret=not job.cuda and config.interpret())
    blocks = _blocks(k, whole_rows, job.cuda, job.rmax)
    ck = _launcher(job, i, k, src, fn, nodes, ops, blocks, hit)
    return ck, [b.name for b in src.params], _kernel_record(job.kind, k, ops, named, src, ck, path, blocks)


def _launcher(job: _Job, i, k, src, fn, nodes, ops, blocks, hit):
    """The kernel as the wrapper launches it, with what the hooks need to replay it as ATen ops."""
    from fxlens.backend.runtime import CompiledKernel

    inject, fallback = job.inject, job.fallback
    pidx = {b.name: j for j, b in enumerate(src.params)}
    boundary = [
        (n, item, pidx[b.base.name], b.shape, b.stride, b.offset) for (n, item), b in src.boundary.items()
    ]
    outs = [(pidx[sn.out.base.name], sn.value.node, _item(sn), sn.out.shape, sn.out.stride, sn.out.offset)
            for sn in k.nodes if sn.out.base.name in src.written]  # fmt: skip
    replay = _replay_nodes(nodes, job.order)
    return CompiledKernel(
        k.name, job.kind, fn, k.xnumel, k.rnumel, *blocks, ops, replay, boundary, outs,
        node_msg=_node_msg(*hit) if hit else "",
        runtime_error=inject is not None and inject.kind == "runtime_error" and hit is not None,
        fallback=k.name in fallback or f"{job.kind}:{i}" in fallback or str(i) in fallback,
        check=config.check_kernels(), size_args=src.size_args, int64="xindex.to(tl.int64)" in src.source,
    )  # fmt: skip


def _kernel_record(kind, k, ops, named, src, ck, path, blocks) -> dict:
    """The kernel's `fxlens_kernel` artifact (numbers at the first call's sizes when symbolic)."""
    written = sum(hint(b.storage_numel()) * b.dtype.itemsize for b in src.written.values())
    record = {
        "graph": kind, "name": k.name, "ops": ops, "nodes": [n.name for n in named],
        "bytes_read": int(src.read_bytes), "bytes_written": int(written), "numel": hint(k.xnumel * k.rnumel),
        "rnumel": hint(k.rnumel), "source": src.source, "source_path": path,
        "signature": src.signature(ck.int64), "blocks": list(blocks),
        # looped reductions: bytes later loops read again, values they compute again
        "bytes_reread": int(src.reread_bytes), "recomputed": sorted(src.recomputed),
    }  # fmt: skip
    if not is_static(k.xnumel, k.rnumel):
        record["symbolic"] = {"numel": str(k.xnumel * k.rnumel), "rnumel": str(k.rnumel),
                              "size_args": src.size_args}  # fmt: skip
    return record


def _log_graph(G, budget, ir_dump, records, source) -> None:
    kind = G.kind
    log_artifact("ir", ir_dump)
    log_json("fusion", lambda: {"graph": kind, "decisions": [_decision(d) for d in budget.decisions]})
    for rec in records:
        log_json("kernel", rec)
    log_json(
        "fallbacks",
        {
            "graph": kind,
            "ops": dict(G.fallbacks),
            "reasons": dict(G.reasons),
            **({"symbolic": G.static_only} if G.static_only else {}),
        },
    )
    log_artifact("wrapper", source)


def _describe(call, G, budget, items, records, source, dynamic) -> None:
    """What tests, benchmarks and the toolkit read off a compiled graph's callable."""
    call.kernels = records
    call.fallbacks = dict(G.fallbacks)
    call.fallback_reasons = dict(G.reasons)
    call.decisions = [_decision(d) for d in budget.decisions]
    call.wrapper_source = source
    call.extern_bytes = sum(_extern_bytes(it) for it in items if isinstance(it, Extern))
    call.dynamic = dynamic
    call.static_only = dict(G.static_only)
    call.size_symbols = dict(G.size_sources)


def _extern_bytes(ext) -> int:
    """Bytes an extern call reads and writes (its tensor arguments and results)."""
    from torch.fx.node import map_aggregate

    from fxlens.backend.ir import Buffer

    bufs: list = []
    map_aggregate((ext.args, ext.kwargs), lambda a: bufs.append(a) if isinstance(a, Buffer) else a)
    bufs += [o for o in ext.outs if o is not None]
    return sum(min(hint(b.storage_numel()), max(1, hint(_numel(b.shape)))) * b.dtype.itemsize for b in bufs)


def _numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _item(sn):
    return getattr(sn.value, "item", None)  # which output of a multi-output node (reductions, max_pool2d)


def _buffers(o):
    from fxlens.backend.ir import Buffer

    if isinstance(o, Buffer):
        return [o]
    if isinstance(o, (list, tuple)):
        return [b for x in o for b in _buffers(x)]
    return []


def _replay_nodes(nodes, order):
    import operator

    extra = set()
    for n in nodes:
        if n.target is operator.getitem and isinstance(n.args[0], torch.fx.Node):
            extra.add(n.args[0])
    return sorted(set(nodes) | extra, key=order.__getitem__)


def _inject_hit(inject, nodes):
    if inject is None:
        return None
    for n in nodes:
        op = str(n.target)
        if op == inject.op or op.startswith(inject.op + "."):
            return n, op
    return None


def _decision(d) -> dict:
    a = d.a
    while getattr(a, "merged_into", None) is not None:
        a = a.merged_into
    a = a.name if isinstance(a, Kernel) else str(a)
    return {"index": d.index, "fused": d.fused, "a": a, "b": d.b, "reason": d.reason}


def _ir_dump(G, rmax) -> str:
    from fxlens.backend.codegen import SchedNode
    from fxlens.backend.scheduler import new_kernel

    lines = [f"# fxlens loop-level IR ({G.kind}): one line per realized value"]
    for b in G.placeholders:
        if b is not None:
            lines.append(f"{b.name}: input {list(b.shape)} stride={list(b.stride)} {b.dtype}")
    for it in G.items:
        if isinstance(it, Extern):
            lines.append(f"{it.name} = extern {it.node.target}(reads {sorted(it.reads)})")
            continue
        assert isinstance(it, SchedNode)
        k = new_kernel(it)
        src = generate(k, "probe", persistent(k, rmax), None)
        ops = [op_name(n) for n in sorted(src.closure, key=lambda n: n.name) if n.op == "call_function"]
        v = it.value
        what = (
            f"reduce {v.rtype} dims={list(v.rdims)} of {list(v.full)}"
            if isinstance(v, Reduction)
            else f"pointwise over {list(v.shape)}"
        )
        tgt = "mutate " if it.mutation else ""
        lines.append(
            f"{tgt}{it.name}: {what} -> {list(it.out.shape)} {it.out.dtype} ops={ops} reads={sorted(b.name for b in src.params if b.name != it.name)}"
        )
    return "\n".join(lines) + "\n"
