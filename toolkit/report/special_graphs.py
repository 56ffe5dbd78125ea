"""Report sections for records that are not a plain Dynamo compile: draft-export issues, graphs of a
special kind (DDP-optimizer splits, compiled autograd, generated FX code, a failed make_fx trace,
AOTInductor compiles), and record kinds no reader of fxlens knows (counted, listed)."""

from __future__ import annotations

from dataclasses import asdict

from fxlens.report.document import Line, Section
from fxlens.report.ranks import rank_ranges
from fxlens.trace.kinds import NO_ID


def export_issues(session) -> list[dict]:
    """Draft export's issues, the same one on many ranks once (with its ranks)."""
    merged: dict[tuple, dict] = {}
    for r in session.ranks:
        for i in r.export_issues:
            row = asdict(i)
            rank = row.pop("rank")
            key = tuple(sorted((k, str(v)) for k, v in row.items()))
            merged.setdefault(key, {**row, "ranks": []})["ranks"].append(rank)
    return list(merged.values())


def special_graphs(session) -> list[dict]:
    merged: dict[tuple, dict] = {}
    for r in session.ranks:
        for s in r.specials:
            key = (s.kind, s.compile_id, s.name, s.detail)
            merged.setdefault(key, {**asdict(s), "ranks": []})["ranks"].append(r.rank)
            merged[key].pop("rank", None)
    return list(merged.values())


def unknown_records(session) -> list[dict]:
    """Record kinds no reader knows, with how many of each (and on which ranks)."""
    out: dict[str, dict] = {}
    for r in session.ranks:
        for kind, n in r.unknown_kinds.items():
            row = out.setdefault(kind, {"kind": kind, "count": 0, "ranks": []})
            row["count"] += n
            row["ranks"].append(r.rank)
    return sorted(out.values(), key=lambda x: (-x["count"], x["kind"]))


def aot_inductor(session) -> list[dict]:
    """Compiles without a compile id (AOTInductor): one per rank that has one, with its code files."""
    out = []
    for r in session.ranks:
        recs = r.by_compile.get(NO_ID) or []
        if not recs:
            continue
        dumps = [s for s in r.specials if s.kind == "aot_inductor"]
        out.append(
            {
                "rank": r.rank,
                "compile_id": NO_ID,
                "records": len(recs),
                "code": [s.name for s in dumps],
            }
        )
    return out


def head_counts(report: dict) -> str:
    """What the first line adds for traces that are not (only) Dynamo compiles: ", 1 AOTInductor
    compile, 1 export issue(s)" (empty when there is none)."""
    parts = []
    if n := len(report.get("aot_inductor") or []):
        parts.append(f"{n} AOTInductor compile(s)")
    if n := len(report.get("export_issues") or []):
        parts.append(f"{n} export issue(s)")
    return "".join(f", {p}" for p in parts)


_KIND_WORDS = {
    "ddp_split": "DDP optimizer split",
    "ddp_child": "DDP bucket submodule",
    "compiled_autograd": "compiled autograd graph",
    "dump_file": "generated FX code",
    "make_fx_fail_partial": "make_fx failed partway",
    "aot_inductor": "AOTInductor code",
}


def special_sections(report: dict) -> list[Section]:
    """Export issues, graphs of a special kind, AOTInductor compiles and unknown record kinds."""
    out = []
    issues = report.get("export_issues") or []
    if issues:
        sec = Section("Export issues", gloss="draft export, as tlparse --export shows them")
        for i in issues:
            where = f"{i['file'].rsplit('/', 1)[-1]}:{i['line']}" if i["file"] else ""
            sec.lines.append(Line(f"{i['kind']}: {i['message']}", alarm=True))
            if where:
                sec.lines.append(Line(f"at {where}" + (f"  `{i['code']}`" if i["code"] else ""), indent=5))
            sec.lines.append(Line(f"fix: {i['fix']}", indent=5))
        out.append(sec)
    specials = report.get("special_graphs") or []
    if specials:
        sec = Section("Graphs of a special kind")
        for s in specials:
            ranks = f" (ranks {rank_ranges(s['ranks'])})" if len(s["ranks"]) > 1 else ""
            cid = "" if s["compile_id"] == NO_ID else f"{s['compile_id']} "
            kind = _KIND_WORDS.get(s["kind"], s["kind"])
            sec.lines.append(Line(f"{cid}{kind}: {s['name']}: {s['detail']}{ranks}"))
        out.append(sec)
    for a in report.get("aot_inductor") or []:
        code = ", ".join(a["code"]) or "no code dump"
        tail = f"{a['records']} record(s); {code}"
        out.append(Section("AOTInductor compile", gloss="no compile id, no Dynamo", tail=tail))
    unknown = report.get("unknown_records") or []
    if unknown:
        tail = ", ".join(f"{u['kind']} x{u['count']}" for u in unknown[:10]) + (
            f" and {len(unknown) - 10} more kind(s)" if len(unknown) > 10 else ""
        )
        gloss = "kept by compile id, shown as they are"
        out.append(Section("Records of kinds fxlens does not read", gloss=gloss, tail=tail))
    return out
