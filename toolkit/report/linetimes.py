"""Where Dynamo's seconds went in the user's code: by source line and function (inclusive and self),
by loop unrolled, and outside tracing (the output graph, guards, the rest), per compile and in all.

Reads the runner's `fxlens_compile_lines` artifacts (fxlens.trace.linetimes) against torch's own
Dynamo time per compile (compilation_metrics: the frame's time less the backend's) and torch's timed
events (`build_guards`, `bytecode_tracing`). A TORCH_TRACE from a job run without fxlens has none:
the section says so.
"""

from __future__ import annotations

from collections import defaultdict

from fxlens.report.document import Code, Excerpt, Line, Section, Table
from fxlens.report.loopfix import loop_finding
from fxlens.trace.userframes import is_resume, shown_path, user_function

NOT_MEASURED = (
    "Dynamo's seconds by source line are measured only while the script runs under fxlens "
    "(run, doctor, fix); this trace has none"
)
DOMINANT = 0.5  # a loop or line with at least this share of Dynamo's seconds is the headline
MAX_FUNCTIONS = 50
TOP_LINES = 20


def compile_lines(session) -> dict:
    """The report's `compile_lines` section."""
    windows = [(r, w) for r in session.ranks for w in getattr(r, "compile_lines", [])]
    if not windows:
        return {"available": False, "note": NOT_MEASURED}
    per_compile = _per_compile(session, windows)
    dynamo = sum(c["dynamo_s"] or c["measured_s"] for c in per_compile)
    parts = {k: round(sum(c[f"{k}_s"] for c in per_compile), 6) for k in ("traced", "output_graph", "guards")}
    measured = sum(parts.values())
    parts["other"] = round(max(0.0, dynamo - measured), 6)
    base = dynamo or measured or 1.0
    funcs = _functions([w for _, w in windows], base)
    loops = sorted(
        (dict(lp, file=f["file"], function=f["function"]) for f in funcs for lp in f["loops"]),
        key=lambda lp: -lp["incl_s"],
    )
    top = sorted(
        (dict(ln, file=f["file"], function=f["function"]) for f in funcs for ln in f["lines"]),
        key=lambda ln: -ln["self_s"],
    )[:TOP_LINES]
    funcs = funcs[:MAX_FUNCTIONS]
    for f in funcs:
        for ln in f["lines"]:
            ln["source"] = session.source_line(f["file"], ln["line"])
    for ln in top:
        ln["source"] = session.source_line(ln["file"], ln["line"])
    out = {
        "available": True,
        "note": "",
        "dynamo_s": round(dynamo, 6),
        "measured_s": round(measured, 6),
        "parts_s": parts,
        "restarted_s": round(sum(c["restarted_s"] for c in per_compile), 6),
        "resume_s": round(sum(c["dynamo_s"] or 0 for c in per_compile if c["resume"]), 6),
        "top_lines": top,
        "loops": loops[:10],
        "functions": funcs,
        "per_compile": per_compile,
    }
    out["headline"] = headline(out)
    # the dominant loop's fixes, when its body calls modules of one class (fxlens fix tries them)
    out["unrolled_loop"] = loop_finding(out, DOMINANT)
    return out


def _per_compile(session, windows) -> list[dict]:
    """One row per compile measured: torch's Dynamo seconds beside what the runner measured."""
    from fxlens.trace.linetimes import chromium_parts  # loaded only where lines were measured

    metrics = {(m.rank, m.compile_id): m for m in session.metrics}
    parts_by_log: dict[str, dict] = {}
    rows: dict[tuple, dict] = {}
    for rank, w in windows:
        key = (w.rank, w.compile_id)
        if rank.log not in parts_by_log:
            parts_by_log[rank.log] = chromium_parts(rank.log)
        row = rows.get(key)
        if row is None:
            m = metrics.get(key)
            torch_parts = parts_by_log[rank.log].get(w.compile_id.split("#")[0], {})
            dyn = m.total_s - m.backend_s if m and m.total_s is not None and m.backend_s is not None else None
            row = rows[key] = {
                "compile_id": w.compile_id,
                "rank": w.rank,
                "function": m.function if m else "",
                "resume": bool(m and is_resume(m.co_name)),
                "dynamo_s": None if dyn is None else round(dyn, 6),
                "traced_s": 0.0,
                "output_graph_s": 0.0,
                "guards_s": round(torch_parts.get("build_guards", 0.0), 6),
                "restarted_s": 0.0,
                "attempts": 0,
                # torch's own time for the same span (its `bytecode_tracing` event), to check against
                "torch_bytecode_tracing_s": torch_parts.get("bytecode_tracing"),
            }
        buckets = dict(w.buckets)
        row["traced_s"] = round(row["traced_s"] + w.steps_s, 6)
        row["output_graph_s"] = round(row["output_graph_s"] + buckets.get("output_graph", 0.0), 6)
        row["attempts"] += 1
        if w.outcome != "ok":
            row["restarted_s"] = round(row["restarted_s"] + w.run_s - buckets.get("backend", 0.0), 6)
    for row in rows.values():
        row["measured_s"] = round(row["traced_s"] + row["output_graph_s"] + row["guards_s"], 6)
    return list(rows.values())


def _functions(windows, base: float) -> list[dict]:
    """Functions summed over compiles, inclusive seconds first, each with its lines and loops."""
    acc: dict[tuple, dict] = {}
    for w in windows:
        for f in w.functions:
            a = acc.setdefault(
                (f.file, f.function, f.first_line),
                {"self_s": 0.0, "incl_s": 0.0, "lines": defaultdict(lambda: [0.0, 0.0, 0, 0]), "loops": {}},
            )
            a["self_s"] += f.self_s
            a["incl_s"] += f.incl_s
            for ln in f.lines:
                r = a["lines"][ln.line]
                r[0] += ln.self_s
                r[1] += ln.incl_s
                r[2] += ln.hits
                r[3] += ln.steps
            for lp in f.loops:
                r = a["loops"].setdefault(lp.line, [lp.last_line, 0, 0.0])
                r[0] = max(r[0], lp.last_line)
                r[1] += lp.iterations
                r[2] += lp.incl_s
    out = []
    for (file, function, first), a in acc.items():
        out.append(
            {
                "file": file,
                "function": _display(function),
                "code_name": function,  # the code object's own name (a resume function's, say)
                "first_line": first,
                "self_s": round(a["self_s"], 6),
                "incl_s": round(a["incl_s"], 6),
                "self_share": round(a["self_s"] / base, 4),
                "incl_share": round(a["incl_s"] / base, 4),
                "lines": [
                    {
                        "line": ln,
                        "self_s": round(r[0], 6),
                        "incl_s": round(r[1], 6),
                        "share": round(r[0] / base, 4),
                        "incl_share": round(r[1] / base, 4),
                        "hits": r[2],
                        "steps": r[3],
                    }
                    for ln, r in sorted(a["lines"].items())
                ],
                "loops": [
                    {
                        "line": ln,
                        "last_line": r[0],
                        "iterations": r[1],
                        "incl_s": round(r[2], 6),
                        "share": round(r[2] / base, 4),
                    }
                    for ln, r in sorted(a["loops"].items())
                ],
            }
        )
    return sorted(out, key=lambda f: -f["incl_s"])


def _display(co_name: str) -> str:
    """A resume function as the user's function it continues: `forward (resumed at 23)`."""
    if not is_resume(co_name):
        return co_name
    at = co_name.rsplit("_at_", 1)[-1]
    return f"{user_function(co_name)} (resumed at {at})"


def headline(section: dict) -> str | None:
    """The loop (else the line) that holds at least half of Dynamo's seconds, in one sentence."""
    loops, top = section.get("loops") or [], section.get("top_lines") or []
    total = section.get("dynamo_s") or 0.0
    if loops and loops[0]["share"] >= DOMINANT:
        lp = loops[0]
        return (
            f"Dynamo spent {lp['incl_s']:.1f} s ({lp['share']:.0%}) of its {total:.1f} s unrolling the loop at "
            f"{shown_path(lp['file'])}:{lp['line']} ({lp['function']}), {lp['iterations']} iterations"
        )
    if top and top[0]["share"] >= DOMINANT:
        ln = top[0]
        return (
            f"Dynamo spent {ln['self_s']:.1f} s ({ln['share']:.0%}) of its {total:.1f} s tracing "
            f"{shown_path(ln['file'])}:{ln['line']} ({ln['function']})"
        )
    return None


def _same(x: str) -> str:
    return x


def line_time_section(report: dict, limit: int = 10, path=shown_path, text=_same) -> list:
    """Dynamo's seconds by source line (fxlens.report.document): the headline, the parts, the
    unrolled loop's fixes, the top LIMIT lines grouped by function (the terminal's table) and each
    file's functions and lines (Markdown and HTML, folded). PATH writes a file, TEXT free text."""

    sec = report.get("compile_lines") or {}
    if not sec.get("available"):
        said = f"Dynamo by source line: {sec.get('note')}."
        return [Section("", [Line(said, 0)])] if sec.get("note") and report.get("graphs") else []
    total = sec["dynamo_s"] or 1.0
    parts = ", ".join(
        f"{name.replace('_', ' ')} {v:.2f} s ({v / total:.0%})" for name, v in sec["parts_s"].items() if v
    )
    lines: list = [Line(text(sec["headline"]))] if sec.get("headline") else []
    lines += [Line(text(x[2:])) for x in loop_fix_lines(sec)]
    if sec.get("restarted_s"):
        lines.append(Line(f"{sec['restarted_s']:.2f} s of the tracing was in attempts torch restarted"))
    groups: dict[tuple, list[dict]] = {}
    for ln in [x for x in sec["top_lines"] if x["share"] >= 0.005][:limit]:
        groups.setdefault((ln["file"], ln["function"]), []).append(ln)
    rows = []
    for (file, function), found in groups.items():
        rows.append([f"{path(file)} {function}", "", "", "", ""])
        for ln in sorted(found, key=lambda x: x["line"]):
            code = text((ln.get("source") or "")[:48])
            share = f"{ln['share']:.0%}"
            rows.append(
                [f"· {ln['line']}: {code}", f"{ln['self_s']:.2f}", f"{ln['incl_s']:.2f}", share, ln["hits"]]
            )
    lines.append(Table(["function / line", "self s", "incl s", "share", "hits"], rows, numbers=False))
    lines += _file_trees(sec, path, text)
    name = f"Where Dynamo's {sec['dynamo_s']:.2f} s went, by source line"
    return [Section(name, lines, tail=parts)]


def loop_fix_lines(sec: dict) -> list[str]:
    """The unrolled loop's block class and the fixes `fxlens fix` tries for it."""
    loop = sec.get("unrolled_loop")
    if not loop:
        return []
    from fxlens.report.fixes import describe  # the fix table: only a report with a dominant loop

    out = [
        f"  the loop's body calls {loop['block_class']} ({shown_path(loop['block_file'])}:{loop['block_line']}): "
        f"{loop['block_s'] * 1000:.1f} ms of tracing per call"
    ]
    out += [f"  fix (`fxlens fix` tries it): {describe(a)}" for a in loop["actions"]]
    return out


def tree(functions: list[dict], min_share: float = 0.005, max_lines: int = 8) -> list[dict]:
    """The functions as a tree file -> function -> line, heaviest (by self seconds) first; lines
    below `min_share` of Dynamo's seconds are left out, at most `max_lines` per function."""
    files: dict[str, dict] = {}
    for f in functions:
        node = files.setdefault(f["file"], {"file": f["file"], "self_s": 0.0, "share": 0.0, "functions": []})
        node["self_s"] += f["self_s"]
        node["share"] += f["self_share"]
        lines = sorted((ln for ln in f["lines"] if ln["share"] >= min_share), key=lambda ln: -ln["self_s"])
        node["functions"].append({**f, "lines": sorted(lines[:max_lines], key=lambda ln: ln["line"])})
    out = sorted(files.values(), key=lambda n: -n["self_s"])
    for node in out:
        node["functions"].sort(key=lambda f: -f["self_s"])
    return [n for n in out if n["share"] >= min_share]


def tree_text(functions: list[dict], source=None, indent: str = "  ") -> list[str]:
    """The tree as indented text lines: `file`, `function:first line`, `line: code` with self and
    inclusive seconds and shares; `source(file, line)` gives a line's code."""
    out = []
    for node in tree(functions):
        out.append(f"{shown_path(node['file'])}  {node['self_s']:.2f} s ({node['share']:.0%})")
        for f in node["functions"]:
            if f["self_share"] < 0.005 and not f["lines"]:
                continue
            out.append(
                f"{indent}{f['function']}:{f['first_line']}  self {f['self_s']:.2f} s ({f['self_share']:.0%})"
                f", incl {f['incl_s']:.2f} s ({f['incl_share']:.0%})"
            )
            for ln in f["lines"]:
                code = (source(f["file"], ln["line"]) if source else "")[:60]
                out.append(
                    f"{indent * 2}{ln['line']}: {code}  self {ln['self_s']:.2f} s ({ln['share']:.0%}), "
                    f"incl {ln['incl_s']:.2f} s, {ln['hits']} hits"
                )
    return out


def compile_functions(session, rank, compile_id: str, final: bool = False) -> list[dict]:
    """One compile's functions (every attempt; FINAL: only the attempts that made its graph, not
    those torch restarted), shares of its own measured seconds."""
    windows = [
        w
        for r in session.ranks
        for w in getattr(r, "compile_lines", [])
        if w.rank == rank and w.compile_id == compile_id and not (final and w.outcome != "ok")
    ]
    total = sum(w.steps_s for w in windows)
    return _functions(windows, total or 1.0) if windows else []


def _file_trees(sec: dict, path, text) -> list:
    """Each file's functions and their lines (self, share, inclusive seconds, hits), one folded
    section per file: Markdown and HTML show them, the terminal its table of top lines only."""

    out = []
    for node in tree(sec["functions"]):
        rows = []
        for f in node["functions"]:
            rows.append(
                [
                    Code(f"{f['function']}:{f['first_line']}"),
                    f"{f['self_s']:.3f}",
                    f"{f['self_share']:.0%}",
                    f"{f['incl_s']:.3f}",
                    "",
                ]
            )
            rows += [
                [
                    Code(f"  {ln['line']}: {text(ln.get('source', ''))}"),
                    f"{ln['self_s']:.3f}",
                    f"{ln['share']:.0%}",
                    f"{ln['incl_s']:.3f}",
                    str(ln["hits"]),
                ]
                for ln in f["lines"]
            ]
        table = Table(["function / line", "self s", "share", "incl s", "hits"], rows)
        out.append(
            Excerpt("", f"{path(node['file'])}: {node['self_s']:.2f} s ({node['share']:.0%})", blocks=[table])
        )
    return out
