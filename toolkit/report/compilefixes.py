"""Compile-time findings beyond an unrolled loop, each with the fix `fxlens fix` tries and measures.

- `retraced_shapes`: Dynamo traced the same code again because an input changed size (a recompile
  cause whose fix is a mark: `mark_dynamic`, or the marks of inputs that change size together).
  Its cost is torch's own compile seconds of those re-traces (compilation_metrics of the recompiles
  the cause names); its actions are the cause's marks.
- `skip_tracing`: a function Dynamo inlined that holds a large share of Dynamo's seconds and gave
  the graph nothing: none of its lines made an op (the printed graph's `# File:` comments) and its
  own lines hold most of its seconds (callees that make ops would hold theirs). The fix is
  `torch.compiler.disable` on it: Dynamo skips it, runs it eagerly, and breaks the graph at each
  call (which the re-run measures).

Pure Python: read by the report (no torch).
"""

from __future__ import annotations

import os
import re

from fxlens.trace.userframes import shown_path

# the recompile causes that are re-traces for a new size, by the fix they carry
_MARKS = ("mark_dynamic", "mark_dynamic_together", "mark_unbacked", "maybe_mark_dynamic")
SKIP_SHARE = 0.3  # a function with at least this share of Dynamo's seconds is worth skipping
SELF_SHARE = 0.8  # ... when its own lines hold at least this much of its inclusive seconds
_FILE = re.compile(r"^\s*# File: (?P<file>.+?):(?P<line>\d+) in ", re.M)
# torch's own code is not the user's to disable (its modules, Dynamo's polyfills)
_TORCH = os.sep + "torch" + os.sep


def compile_fixes(report: dict, session) -> list[dict]:
    """The report's `compile_fixes`: re-traces per shape, then functions worth skipping."""
    return retraced_shapes(report) + skip_tracing(report, session)


def retraced_shapes(report: dict) -> list[dict]:
    """One finding per recompile cause that a mark answers, with the seconds of its re-traces."""
    times = report.get("compile_times") or {}
    secs = {(c["rank"], c["compile_id"]): c.get("total_s") or 0.0 for c in times.get("per_compile") or []}
    total = times.get("total_s") or 0.0
    out = []
    for c in report.get("recompile_causes") or []:
        acts = [a for a in c.get("actions") or [] if a["kind"] in _MARKS]
        n = len(c.get("compile_ids") or [])
        if not acts or n < 2:
            # one re-trace is what automatic dynamic shapes cost once (the recompile section calls it
            # expected): the next compile is already dynamic, so a mark saves at most that one trace
            continue
        rank = (c.get("ranks") or [None])[0]
        cost = sum(secs.get((rank, cid), 0.0) for cid in c.get("compile_ids") or [])
        # the share of that rank's own compiling: every rank compiles, so the job's total over
        # all ranks would make a rank's re-traces look N times smaller than they are
        of = sum(v for (r, _), v in secs.items() if r == rank) or total
        share = cost / of if of else 0.0
        on = f" on rank {rank}" if rank is not None and len({r for r, _ in secs}) > 1 else ""
        out.append(
            {
                "kind": "retraced_shapes",
                "function": c["function"],
                "file": c.get("file"),
                "line": c.get("line"),
                "compile_ids": list(c.get("compile_ids") or []),
                "cost_s": round(cost, 6),
                "share": round(share, 4),
                "message": (
                    f"Dynamo traced `{c['function']}` {n} more time{'s' * (n != 1)} for new sizes of "
                    f"{c.get('subject') or c['message']}: {cost:.2f} s ({share:.0%}) of {of:.2f} s compiling{on}"
                ),
                "actions": acts,
            }
        )
    return sorted(out, key=lambda f: -f["cost_s"])


def skip_tracing(report: dict, session) -> list[dict]:
    """Functions Dynamo inlined whose tracing made no op and holds at least SKIP_SHARE of its seconds."""
    sec = report.get("compile_lines") or {}
    if not sec.get("available"):
        return []  # a bare TORCH_TRACE log: no line times, and no graph is read for op lines either
    from fxlens.report.fixes import action  # the fix table, loaded only where a fix may be named

    op_lines = _op_lines(session)
    roots = {
        (c.get("file"), c.get("co_name") or c.get("function"))
        for c in (report.get("compile_times") or {}).get("per_compile") or []
    }
    total = sec.get("dynamo_s") or 0.0
    out = []
    for f in sec.get("functions") or []:
        if f["incl_share"] < SKIP_SHARE or f["self_s"] < SELF_SHARE * f["incl_s"]:
            continue
        if _TORCH in f["file"] or (f["file"], f.get("code_name", f["function"])) in roots:
            continue
        if f.get("code_name", f["function"]).startswith("<"):  # a lambda, a comprehension: no name to wrap
            continue
        lines = {ln["line"] for ln in f["lines"]}
        made = op_lines.get(os.path.realpath(f["file"]), set())
        if not lines or made & set(range(f["first_line"], max(lines) + 1)):
            continue
        where = f"{shown_path(f['file'])}:{f['first_line']}"
        out.append(
            {
                "kind": "skip_tracing",
                "function": f["function"],
                "file": f["file"],
                "line": f["first_line"],
                "cost_s": f["incl_s"],
                "share": f["incl_share"],
                "message": (
                    f"Dynamo spent {f['incl_s']:.2f} s ({f['incl_share']:.0%}) of its {total:.2f} s tracing "
                    f"`{f['function']}` ({where}), which put no op in the graph"
                ),
                "actions": [
                    action(
                        "disable",
                        function=f.get("code_name", f["function"]),
                        file=f["file"],
                        first_line=f["first_line"],
                        where=where,
                    )
                ],
            }
        )
    return out


def _op_lines(session) -> dict[str, set[int]]:
    """Per file (real path), the source lines that made an op in some graph (torch's printed
    `# File: path:line` comments of each Dynamo graph)."""
    out: dict[str, set[int]] = {}
    for g in session.graphs:
        code = session.artifact(g.compile_id, "dynamo_output_graph", g.rank) or ""
        for m in _FILE.finditer(code):
            out.setdefault(os.path.realpath(m["file"]), set()).add(int(m["line"]))
    return out


def compile_fix_section(report: dict) -> list:
    """The findings as one Section, each with the fixes `fxlens fix` tries (its joined lines)."""
    if not report.get("compile_fixes"):
        return []
    from fxlens.report.document import Line, Section
    from fxlens.report.fixes import describe  # the fix table: only where a fix is named

    lines = []
    for f in report.get("compile_fixes") or []:
        lines.append(Line(f["message"]))
        lines += [
            Line(f"fix (`fxlens fix` tries it): {describe(a)}", indent=4, joins=True) for a in f["actions"]
        ]
    return [Section("Compile time a fix can cut", lines)] if lines else []
