"""Repeated blocks: one graph that inlines N instances of one module class (a transformer's decoder
layers), the share of its compile time they cost, and the regional-compilation fix.

Where it is read from, all torch's own text:
- the guard tree (`dynamo_cpp_guards_str`): each module Dynamo guarded on is a `GuardManager:
  source=L['self']._modules['layers']._modules['3'], ..., type=<class 'pkg.LlamaDecoderLayer'>` line,
  so the instances of a class under one container, the container's attribute path and the root
  module's class are all there;
- the graph's parameter inputs (`dynamo_output_graph`: `l_self_modules_layers_modules_3_...`), for
  the count when a guard tree names no types;
- the printed graph's `# File: path:line` comments: the ops traced from source lines that ran at least
  N times are the blocks' (an estimate: a line a block shares with the rest of the model, such as
  nn.Linear's forward, counts for the block too), and that share of the graph's ops is the share of
  its compile time the blocks cost.

Regional compilation compiles the block once and reuses it for every instance, so the saving
estimated is the blocks' share times (1 - 1/N); `bench/regional.py` measures it.

Where the script ran under fxlens, Dynamo's seconds by source line were measured
(fxlens.report.linetimes): the block's cost is then measured, not estimated -- the inclusive seconds
Dynamo spent tracing the block class's own `forward` in that compile, per entry (the class confirmed
from the code's source, as fxlens.report.loopfix does), times the blocks; the backend's part (inductor
compiles every block's ops) is still the ops' share of its seconds, and is said apart.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict

from fxlens.report.document import Line, Section
from fxlens.trace.graph_code import parse_graph

MIN_COUNT = 2  # instances of one class under one container that make a repeated block

# `GuardManager: source=L['self']._modules['layers']._modules['0'], accessed_by=..., type=<class 'x.C'>`
_MANAGER = re.compile(r"GuardManager: source=(?P<source>\S+?), .*?type=<class '(?P<cls>[\w.]+)'>")
_CHILD = re.compile(r"^(?P<parent>.+)\._modules\['(?P<name>[^']+)'\]$")
# torch's own layers (Linear, ReLU, LayerNorm) repeat inside a Sequential without being blocks worth
# compiling alone; torch's transformer layers are such blocks
_LEAF = re.compile(r"^torch\.nn\.modules\.(?!transformer\.)")
# parameter inputs of a Dynamo graph: l_self_modules_layers_modules_3_modules_... (one per parameter)
_PARAM = re.compile(r"\b[lL]_(?:self|args_\d+)_((?:modules_\w+?_)*?)modules_(\d+)_")


def _short(cls: str) -> str:
    return cls.rsplit(".", 1)[-1]


def _attribute(parent: str, root: str) -> str:
    """`L['self']._modules['model']._modules['layers']` -> "model.layers" (relative to the root)."""
    rest = parent[len(root) :] if parent.startswith(root) else parent
    return ".".join(re.findall(r"\._modules\['([^']+)'\]", rest))


def find_blocks(guards: list[str]) -> list[dict]:
    """Repeated module classes in one compile's guard tree: `[{block_class, block_class_path, count,
    container, root_source, root_class}]`, largest first."""
    types: dict[str, str] = {}
    for ln in guards:
        if m := _MANAGER.search(ln):
            types.setdefault(m["source"], m["cls"])
    groups: dict[tuple[str, str], set[str]] = defaultdict(set)
    for src, cls in types.items():
        if m := _CHILD.match(src):
            groups[(m["parent"], cls)].add(m["name"])
    out = []
    for (parent, cls), names in groups.items():
        # a block repeats in a ModuleList or Sequential (children "0", "1", ...): distinct named
        # children of one class (q_proj, k_proj, v_proj) are parts of one block, not blocks
        if len(names) < MIN_COUNT or not all(n.isdigit() for n in names) or _LEAF.match(cls):
            continue
        root = re.match(r"^L\[[^\]]+\](?:\[\d+\])?", parent)
        root_src = root.group(0) if root else ""
        out.append(
            {
                "block_class": _short(cls),
                "block_class_path": cls,
                "count": len(names),
                "container": parent,
                "root_source": root_src,
                "root_class": types.get(root_src, ""),
            }
        )
    # nested repeats (heads inside layers) are smaller: the outermost, largest group first
    return sorted(out, key=lambda b: (-b["count"], len(b["container"])))


def count_from_params(graph_code: str) -> int:
    """Instances of the most repeated numbered container in a graph's parameter inputs (0: none)."""
    seen: dict[str, set[str]] = defaultdict(set)
    for m in _PARAM.finditer(graph_code):
        seen[m.group(1)].add(m.group(2))
    return max((len(v) for v in seen.values()), default=0)


def block_share(graph_code: str, count: int) -> tuple[float, int, int]:
    """(share, block ops, all ops) of a graph's op nodes traced from source lines that ran `count`
    times or more: the repeated blocks' part of the graph (an estimate, see the module doc)."""
    ops = [n for n in parse_graph(graph_code) if n.op in ("call_function", "call_method", "call_module")]
    per_line = Counter(n.source for n in ops if n.source)
    inside = sum(1 for n in ops if n.source and per_line[n.source] >= count)
    return (inside / len(ops) if ops else 0.0), inside, len(ops)


def repeated_blocks(session, per_compile: list[dict]) -> list[dict]:
    """One finding per compile (first rank that has it) whose graph inlines a repeated block, largest
    compile first: `{kind, block_class, block_class_path, count, root, root_class, attribute,
    compile_id, rank, function, file, line, compile_s, block_share, block_s, est_saving_s,
    cost_source, per_block_s, dynamo_block_s, backend_block_s, measured_block, cost_note, message,
    fix}`."""
    times = {(r["rank"], r["compile_id"]): r for r in per_compile}
    lines_measured = any(getattr(r, "compile_lines", None) for r in session.ranks)
    out: list[dict] = []
    seen: set[tuple] = set()
    for g in session.graphs:
        if (g.compile_id, g.function) in seen:
            continue
        guards = session.guards(g.compile_id, g.rank)
        found = find_blocks(guards)
        if not found:
            continue
        b = found[0]
        code = session.artifact(g.compile_id, "dynamo_output_graph", g.rank) or ""
        count = b["count"] or count_from_params(code)
        share, inside, ops = block_share(code, count)
        row = times.get((g.rank, g.compile_id)) or {}
        total = row.get("total_s")
        root = _short(b["root_class"]) if b["root_class"] else g.function
        root_fn = f"{root}.forward" if b["root_class"] else g.function
        attr = _attribute(b["container"], b["root_source"])
        measured = _measure(session, g, b["block_class"]) if lines_measured else None
        cost = block_cost(total, row.get("backend_s"), share, count, measured, lines_measured)
        seen.add((g.compile_id, g.function))
        out.append(
            {
                "kind": "repeated_block",
                "block_class": b["block_class"],
                "block_class_path": b["block_class_path"],
                "count": count,
                "root": root_fn,
                "root_class": b["root_class"],
                "attribute": attr,
                "compile_id": g.compile_id,
                "rank": g.rank,
                "function": g.function,
                "file": g.file,
                "line": g.line,
                "compile_s": total,
                "block_ops": inside,
                "graph_ops": ops,
                "block_share": round(share, 4),
                **cost,
                "message": _message(b["block_class"], count, root_fn, g.compile_id, total, share, cost),
                "fix": _fix(b["block_class"], attr),
                # what `fxlens fix` tries: each instance of the block compiled instead of the root
                "actions": [_regional(b["block_class"], root_fn)],
            }
        )
    return sorted(out, key=lambda f: -(f["compile_s"] or 0.0))


def _measure(session, g, block_class: str) -> dict | None:
    """The block's forward as Dynamo traced it in graph G's compile (its final attempt)."""
    from fxlens.report.linetimes import compile_functions  # only where lines were measured

    return measured_block(compile_functions(session, g.rank, g.compile_id, final=True), block_class)


def measured_block(functions: list[dict], block_class: str) -> dict | None:
    """The block class's own `forward` among the functions Dynamo traced in one compile (rows of
    fxlens.report.linetimes), confirmed from its source: the class whose method starts at the code's
    first line is BLOCK_CLASS. `{file, first_line, entries, incl_s, per_block_s}` (per entry: the
    seconds Dynamo spent tracing one block, with what it inlined), or None when no such code was
    traced or its source is not on this machine (an inherited `forward` is its base class's code)."""
    from fxlens.report.loopfix import activations, class_of

    own = [
        (f, n)
        for f in functions
        if f.get("code_name", f["function"]) == "forward"
        and (n := activations(f)) > 0
        and class_of(f["file"], f["first_line"]) == block_class
    ]
    if not own:
        return None
    f, n = max(own, key=lambda fn: fn[0]["incl_s"])
    return {
        "file": f["file"],
        "first_line": f["first_line"],
        "entries": n,
        "incl_s": f["incl_s"],
        "per_block_s": round(f["incl_s"] / n, 6),
    }


NO_LINES = "estimate from the graph's ops: Dynamo's seconds by source line are measured only under fxlens"
NOT_FOUND = "estimate from the graph's ops: the block class's own forward is not among the code Dynamo traced"


def block_cost(total, backend_s, share: float, count: int, measured: dict | None, lines: bool) -> dict:
    """The blocks' seconds and the regional fix's saving (one block compiled instead of COUNT):
    measured where MEASURED (Dynamo's tracing per block, times the blocks; the backend's part the ops'
    SHARE of its seconds), else the ops' share of the compile's TOTAL."""
    out = {"cost_source": "estimate", "per_block_s": None, "dynamo_block_s": None, "backend_block_s": None,
           "measured_block": measured, "cost_note": NOT_FOUND if lines else NO_LINES}  # fmt: skip
    if measured is not None:
        dyn = measured["per_block_s"] * count
        back = (backend_s or 0.0) * share
        out.update(cost_source="measured", per_block_s=measured["per_block_s"], dynamo_block_s=round(dyn, 6),
                   backend_block_s=round(back, 6), cost_note="")  # fmt: skip
        block_s = dyn + back
    elif total is not None:
        block_s = total * share
        out["per_block_s"] = round(block_s / count, 6)
    else:
        return {"block_s": None, "est_saving_s": None, **out}
    return {"block_s": round(block_s, 6), "est_saving_s": round(block_s * (1 - 1 / count), 6), **out}


def _message(cls: str, n: int, root: str, cid: str, total, share: float, cost: dict) -> str:
    head = f"{cls} x {n} inlined into one graph of `{root}` (compile {cid})"
    saving = cost["est_saving_s"]
    if cost["cost_source"] == "measured":
        per, dyn, back = cost["per_block_s"], cost["dynamo_block_s"], cost["backend_block_s"]
        of = f" of its {total:.2f} s compile" if total else ""
        text = f"{head}: Dynamo traced each {cls} in {per * 1000:.1f} ms (measured): {dyn:.2f} s{of}"
        if back < 0.005 or back < 0.05 * dyn:  # the backend did next to nothing (backend="eager")
            return (
                text
                + f"; compiling one {cls} instead would save ~{saving:.2f} s of Dynamo's tracing (measured)"
            )
        return (
            text + f"; compiling one {cls} instead would save ~{saving:.2f} s: Dynamo's "
            f"{dyn * (1 - 1 / n):.2f} s (measured) and the backend's ~{back * (1 - 1 / n):.2f} s "
            f"(estimate: ~{100 * share:.0f}% of the graph's ops are in the blocks)"
        )
    if total is None:
        return head + f": ~{100 * share:.0f}% of the graph's ops are in the blocks"
    est = (
        f"; compiling one {cls} instead would save ~{saving:.2f} s (estimate from op counts)"
        if saving
        else ""
    )
    return (
        head + f": ~{100 * share:.0f}% of its ops, ~{total * share:.2f} s of its {total:.2f} s compile{est}"
    )


def _fix(cls: str, attr: str) -> str:
    where = f"model.{attr}" if attr else f"the model's {cls} modules"
    return (
        f"regional compilation: compile the repeated block, not the whole model -- `for block in {where}: "
        f"block.compile()` in place of `torch.compile(model)`; Dynamo compiles {cls} once and every "
        "instance reuses that code (same graph, other weights), so cold start pays for one block; "
        "a Python value that differs per block (a KV-cache entry per layer, a layer index used in "
        "control flow) recompiles it per block instead: check `fxlens report` on the regional run"
    )


def block_section(report: dict, limit: int | None = 5) -> list:
    """Each repeated block (the first LIMIT) with its cost and the fix (fxlens.report.document)."""

    lines = []
    for b in (report.get("repeated_blocks") or [])[:limit]:
        lines += [Line(f"Repeated block: {b['message']}", 0), Line(f"fix: {b['fix']}", joins=True)]
    return [Section("", lines)] if lines else []


def block_findings(report: dict) -> list[dict]:
    """The repeated blocks as doctor findings (`{kind, message, file, line, fix, cost_ms, function}`,
    fxlens.doctor.finding) with the fields `fxlens fix` needs to try regional compilation:
    `block_class`, `block_class_path`, `count`, `root`, `attribute`, and the saving with where it came
    from (`est_saving_s`, `cost_source`, `per_block_s`). `cost_ms` is 0: the saving is compile time
    once, not a cost per call."""
    return [
        {
            "kind": "repeated_block",
            "message": b["message"],
            "file": b["file"],
            "line": b["line"],
            "fix": b["fix"],
            "cost_ms": 0.0,
            "function": b["function"],
            **{
                k: b[k]
                for k in ("block_class", "block_class_path", "count", "root", "attribute", "est_saving_s")
            },
            **{k: b.get(k) for k in ("cost_source", "per_block_s")},
        }
        for b in report.get("repeated_blocks") or []
    ]


def _regional(block_class: str, root_fn: str):
    """The regional-compilation fix (its module loaded only where a repeated block is found)."""
    from fxlens.report.fixes import action

    return action("regional", block=block_class, site=f"`{root_fn}`")
