"""Ranks grouped by behaviour: the ranks that compiled the same way are one group, the others are
named with where and why they diverge.

A thousand-rank job usually has one story and a few outliers (the classic hang: one rank recompiles
on a short batch while the rest wait in the collective). So every rank is reduced to its sequence of
compiles -- each compile's id, function and what it produced (graph, input shapes, breaks, failed
guards, failure) but nothing that varies run to run (times, pids) -- and ranks with equal sequences
are one group. The largest group is the job's normal behaviour; each other group is compared with it
compile by compile, and the first compile that differs is where, and its record says why. What a
compile produced includes what the backend generated (inductor's output code, the fxlens backend's
kernels): a rank whose Dynamo graphs match the others' but whose inductor wrote other code is an
outlier too, named as such.

Every list of ranks in text is a list of ranges ("0-776, 778-1023"); JSON keeps the full lists.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from fxlens.report.document import Line, Section
from fxlens.trace.guards import parse_failed_guard
from fxlens.trace.model import RankModel
from fxlens.trace.sanitize import clip

# outlier groups named one per line in the text report; the rest are counted (JSON has them all)
TEXT_GROUPS = 8
# object ids and addresses in guard text (`___check_obj_id(L['self'], 140514640679520)`) differ on
# every process: compared as one placeholder, or every rank would be a group of its own
_IDS = re.compile(r"\b(?:0x[0-9a-f]+|\d{7,})\b")

# What differs between ranks' generated code without the code differing: (pattern, replacement),
# applied in order before two ranks' output code is compared. Each rank of a one-node job drives its
# own GPU, so its code names device 1 where rank 0's names device 0.
NORMALISE = (
    (re.compile(r"^# kernel path: .*$", re.M), "# kernel path: <path>"),  # the cache folder
    (re.compile(r"\b(cuda|xpu|mps|hpu|npu|mtia):\d+"), r"\1:<i>"),  # "cuda:1" in annotations
    (re.compile(r"\bindex=\d+"), "index=<i>"),  # DeviceProperties(type='cuda', index=1, ...)
    (re.compile(r"\b(_DeviceGuard|set_device|get_raw_stream|device)\((\d+)\)"), r"\1(<i>)"),
    (re.compile(r"\bstream\d+\b"), "stream<i>"),  # `stream1 = get_raw_stream(1)`
    (re.compile(r"(?:/[\w.@+-]+)*/(?:tmp\w*|torchinductor_\w+)(?:/[\w.@+-]+)+"), "<path>"),  # temp dirs
    (re.compile(r"\b[a-z0-9]{52}\b"), "<hash>"),  # inductor's code hashes (file and kernel names)
    (re.compile(r"\b0x[0-9a-f]{6,}\b"), "<addr>"),
)


def normalise_code(code: str) -> str:
    """Generated code with what differs per rank or per machine but not in substance set aside:
    device indices, temp and cache paths, content hashes, addresses (`NORMALISE`)."""
    for pattern, repl in NORMALISE:
        code = pattern.sub(repl, code)
    return code


def _code_digest(code: str) -> str:
    return hashlib.sha1(normalise_code(code).encode()).hexdigest()[:16]


def without_rank(text: str | None, rank: int | None) -> str:
    """`text` with this rank's number, where the text names it as the rank, spelled `<rank>`."""
    if not text or rank is None:
        return text or ""
    return re.sub(rf"(?i)\b(rank[\s_:=#-]*){rank}\b", r"\1<rank>", text)


def rank_ranges(ranks: Iterable[int | None], limit: int = 0) -> str:
    """`[0, 1, 2, 5, 7, 8]` -> "0-2, 5, 7-8"; `limit` > 0 keeps that many ranges and counts the rest."""
    nums = sorted({r for r in ranks if r is not None})
    none = any(r is None for r in ranks)
    spans: list[str] = []
    i = 0
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        spans.append(str(nums[i]) if i == j else f"{nums[i]}-{nums[j]}")
        i = j + 1
    if none:
        spans.append("-")
    if limit and len(spans) > limit:
        spans = spans[:limit] + [f"... ({len(nums)} ranks)"]
    return ", ".join(spans)


@dataclass(frozen=True)
class Step:
    """One compile on one rank, as far as it must match across ranks (nothing timing- or pid-like)."""

    compile_id: str
    function: str
    kind: str  # "compile" (frame's first), "recompile", "failed"
    nodes: int | None
    ops: tuple[str, ...]
    shapes: str  # the graph's input and node sizes, as torch logged them
    breaks: tuple[tuple[str, str, int], ...]  # (reason, file, line)
    failed_guards: tuple[str, ...]
    failure: str  # torch's failure type and the first line of its text, the rank's number taken out
    # what the backend generated: inductor's output code (a digest of it, normalised: see NORMALISE)
    # and the fxlens backend's kernels (name and ops): ranks with the same graphs can still differ here
    output: tuple[str, ...] = ()
    kernels: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # inductor's output files by name (a hash of their code), to name them; not compared
    output_files: tuple[str, ...] = field(default=(), compare=False)


def rank_steps(model: RankModel) -> tuple[Step, ...]:
    """The rank's compiles in the order it ran them (the order their records first appear)."""
    graphs = {g.compile_id: g for g in model.graphs}
    metrics = {m.compile_id: m for m in model.metrics}
    recompiles = {r.compile_id: r for r in model.recompiles}
    breaks: dict[str, list] = {}
    for b in model.graph_breaks:
        breaks.setdefault(b.compile_id, []).append((b.reason, b.file, b.line))
    kernels: dict[str, list] = {}
    for k in model.kernels:
        kernels.setdefault(k.compile_id, []).append((k.name, k.ops))
    steps = []
    for cid, recs in model.by_compile.items():
        g, m, rc = graphs.get(cid), metrics.get(cid), recompiles.get(cid)
        function = (g or m or rc).function if (g or m or rc) else "?"
        failure = _failure(m, model.rank)
        shapes, output, files = "", [], []
        for rec in recs:
            if rec.kind == "dynamo_output_graph":
                shapes = str((rec.meta.get("dynamo_output_graph") or {}).get("sizes") or "")
            elif rec.kind == "inductor_output_code":
                path = str((rec.meta.get("inductor_output_code") or {}).get("filename") or "?")
                files.append(path.rsplit("/", 1)[-1])  # the cache folder differs per machine
                output.append(_code_digest(rec.payload()))
        kind = "failed" if failure else "recompile" if rc else "compile"
        steps.append(
            Step(
                cid,
                function,
                kind,
                g.num_nodes if g else None,
                g.ops if g else (),
                shapes,
                tuple(breaks.get(cid, ())),
                tuple(_IDS.sub("<id>", x) for x in rc.failed_guards) if rc else (),
                failure,
                tuple(output),
                tuple(kernels.get(cid, ())),
                tuple(files),
            )
        )
    return tuple(steps)


def _failure(m, rank: int | None) -> str:
    """A failed compile's type and torch's whole text, as far as it must match across ranks (the
    rank's own number and object ids taken out)."""
    if m is None or not m.fail_type:
        return ""
    text = _IDS.sub("<id>", without_rank((m.fail_reason or "").strip(), rank))
    return f"{m.fail_type}: {text}" if text else m.fail_type


def _short(failure: str) -> str:
    """A failure in one line: its type and torch's first lines, clipped."""
    return clip(" ".join(failure.split()), 140)


def _guard_change(guards: tuple[str, ...]) -> str:
    """The newest failed guard as a change: "input `x`, dim 0 8 -> 5" (torch's text if no rule fits)."""
    if not guards:
        return "guards failed"
    g = parse_failed_guard(guards[0])
    if g.kind == "other":
        return g.text or guards[0]
    change = f"{g.expected} -> {g.actual}" if g.expected and g.actual else "changed"
    from fxlens.report.causefix import CAUSES, format_for_guard  # only a trace that recompiled

    return f"{format_for_guard(CAUSES[g.kind][0], g)} {change}"


def _describe(step: Step) -> str:
    """Why a compile that the normal ranks did not have happened, in one line."""
    if step.failure:
        return f"compile of {step.function} failed ({_short(step.failure)})"
    if step.kind == "recompile":
        return f"recompile of {step.function}, {_guard_change(step.failed_guards)}"
    if step.breaks:
        reason, file, line = step.breaks[0]
        return f"compile of {step.function} with a graph break at {file.rsplit('/', 1)[-1]}:{line} ({reason})"
    return f"compile {step.compile_id} of {step.function}"


def _difference(mine: Step, theirs: Step) -> str:
    """What differs between two compiles at the same position (this rank's vs the normal ranks')."""
    if (mine.compile_id, mine.function) != (theirs.compile_id, theirs.function) or mine.kind != theirs.kind:
        return _describe(mine) + f" where the others ran compile {theirs.compile_id} of {theirs.function}"
    parts = []
    if mine.failure != theirs.failure:
        parts.append(f"failed ({_short(mine.failure)})" if mine.failure else "did not fail")
    if mine.failed_guards != theirs.failed_guards:
        parts.append(f"recompiled because {_guard_change(mine.failed_guards)}")
    if mine.breaks != theirs.breaks:
        at = ", ".join(f"{f.rsplit('/', 1)[-1]}:{ln} ({r})" for r, f, ln in mine.breaks) or "none"
        parts.append(f"graph breaks: {at}")
    if (mine.nodes, mine.ops) != (theirs.nodes, theirs.ops):
        parts.append(f"graph of {mine.nodes} nodes vs {theirs.nodes}")
    elif mine.shapes != theirs.shapes:
        parts.append("graph shapes differ")
    if mine.output != theirs.output:
        parts.append(
            f"inductor's output code differs ({_files(mine.output_files)} vs {_files(theirs.output_files)})"
        )
    if mine.kernels != theirs.kernels:
        parts.append(f"fxlens kernels differ ({_kernel_change(mine.kernels, theirs.kernels)})")
    return f"compile {mine.compile_id} of {mine.function}: " + "; ".join(parts or ["differs"])


def _files(names: tuple[str, ...]) -> str:
    """Output files by name (a hash of the code), the hash cut to 12 characters."""
    return ", ".join(n if len(n) <= 20 else f"{n[:12]}…{n[n.rfind('.') :]}" for n in names) or "none"


def _kernel_change(mine: tuple, theirs: tuple) -> str:
    """The first kernel that differs: "kernel_0 ops add, mul vs add" or "3 kernels vs 2"."""
    for (name, ops), (name2, ops2) in zip(mine, theirs):
        if (name, ops) != (name2, ops2):
            if name != name2:
                return f"{name} vs {name2}"
            return f"{name}: ops {', '.join(ops)} vs {', '.join(ops2)}"
    return f"{len(mine)} kernel(s) vs {len(theirs)}"


def first_divergence(mine: tuple[Step, ...], normal: tuple[Step, ...]) -> dict | None:
    """Where a rank's compiles first differ from the normal ranks': compile id, function, step (the
    1-based position of that compile on the rank), kind and cause."""
    for i in range(max(len(mine), len(normal))):
        a = mine[i] if i < len(mine) else None
        b = normal[i] if i < len(normal) else None
        if a == b:
            continue
        if a is None:  # the rank stopped compiling where the others went on
            return {
                "compile_id": b.compile_id,
                "function": b.function,
                "step": i + 1,
                "kind": "missing",
                "cause": f"no compile {b.compile_id} of {b.function} (the other ranks compiled it)",
            }
        cause = _describe(a) if b is None else _difference(a, b)
        return {
            "compile_id": a.compile_id,
            "function": a.function,
            "step": i + 1,
            "kind": a.kind,
            "cause": cause,
        }
    return None


def rank_groups(session) -> dict:
    """`{groups, per_rank}`: the groups, largest first (the first is the job's normal behaviour), each
    with its ranks and, for the others, the first divergence from the normal group; one row per rank."""
    models = session.rank_models  # worker processes are not ranks (fxlens.trace.session.mark_workers)
    by_steps: dict[tuple[Step, ...], list[RankModel]] = {}
    for m in models:
        by_steps.setdefault(rank_steps(m), []).append(m)
    order = sorted(by_steps.items(), key=lambda kv: (-len(kv[1]), _first_rank(kv[1])))
    normal = order[0][0] if order else ()
    groups, group_of = [], {}
    for i, (steps, members) in enumerate(order):
        ranks = [m.rank for m in members]
        for m in members:
            group_of[id(m)] = i
        groups.append(
            {
                "ranks": ranks,
                "ranges": rank_ranges(ranks),
                "count": len(ranks),
                "normal": i == 0,
                "compiles": len(steps),
                "functions": sorted({s.function for s in steps}),
                "first_divergence": None if i == 0 else first_divergence(steps, normal),
            }
        )
    per_rank = [
        {
            "rank": m.rank,
            "group": group_of[id(m)],
            "compiles": len(m.by_compile),
            "graphs": len(m.graphs),
            "graph_breaks": len(m.graph_breaks),
            "recompiles": len(m.recompiles),
            "failures": sum(1 for x in m.metrics if x.fail_type),
            "compile_s": round(sum(x.total_s or 0.0 for x in m.metrics), 3),
        }
        for m in models
    ]
    return {"groups": groups, "per_rank": per_rank}


def _first_rank(members: list[RankModel]) -> int:
    return min((m.rank for m in members if m.rank is not None), default=-1)


def _who(group: dict) -> str:
    if group["count"] == 1:
        return f"rank {group['ranges']}"
    return f"ranks {rank_ranges(group['ranks'], limit=6)}"


def rank_section(report: dict) -> list[Section]:
    """The Ranks section: a few lines however many ranks (none for one rank)."""
    rg = report.get("rank_groups") or {}
    groups = rg.get("groups") or []
    if len(report.get("ranks") or []) < 2 or not groups:
        return []
    n = sum(g["count"] for g in groups)
    head = groups[0]
    out = Section("Ranks", tail=f"{n}, {len(groups)} behaviour(s)")
    if len(groups) == 1:
        alike = f"all ranks alike ({rank_ranges(head['ranks'], limit=6)})"
    elif head["count"] == 1:  # no majority: the lowest rank is what the others are compared with
        alike = f"rank {head['ranges']} (the reference)"
    else:
        alike = f"{head['count']} ranks alike ({rank_ranges(head['ranks'], limit=6)})"
    functions = (", ".join(head["functions"][:4]) or "nothing") + (
        " ..." if len(head["functions"]) > 4 else ""
    )
    out.lines.append(Line(f"{alike}: {head['compiles']} compile(s) of {functions}"))
    for g in groups[1 : 1 + TEXT_GROUPS]:
        d = g["first_divergence"] or {}
        out.lines.append(
            Line(
                f"{_who(g)}: {d.get('cause', 'differs')}"
                f" (from compile {d.get('compile_id')} of {d.get('function')}, step {d.get('step')})",
                alarm=True,
            )
        )
    rest = groups[1 + TEXT_GROUPS :]
    if rest:
        n_rest = sum(g["count"] for g in rest)
        more = f"{len(rest)} more group(s) of {n_rest} rank(s) differ (see --json rank_groups)"
        out.lines.append(Line(more, alarm=True))
    if len(groups) > 1:
        divergence = "RANK DIVERGENCE: ranks that compile differently can hang in collectives"
        out.lines.append(Line(divergence, alarm=True))
    return [out]


def fold_ranks(rows: list[dict], limit: int = 6) -> list[dict]:
    """Rows equal but for their rank, merged into one whose `rank` is the ranges ("0-776, 778-1023").

    For the text tables of a many-rank job: the same graph on 1024 ranks is one row, not 1024.
    """
    merged: dict[str, tuple[dict, list]] = {}
    for row in rows:
        key = repr(sorted((k, repr(v)) for k, v in row.items() if k != "rank"))
        if key not in merged:
            merged[key] = (row, [])
        merged[key][1].append(row.get("rank"))
    return [{**row, "rank": rank_ranges(ranks, limit=limit)} for row, ranks in merged.values()]
