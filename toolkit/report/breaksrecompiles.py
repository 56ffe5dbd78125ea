"""The two sections read first: graph breaks and recompiles by root cause, as document blocks.

Each is built once for every output: the terminal shows the table's first LIMIT rows and then each
finding's lines under it; Markdown and HTML show the table (its rows past MAX_ROWS folded) and
each finding as one bullet, its detail lines appended (`Line.joins`). The caller gives WHERE
(file, line) -> str, how the output writes a location, and TEXT, how it shortens free text.
"""

from __future__ import annotations

from fxlens.report.document import MAX_ROWS, Code, Line, Section, Table
from fxlens.report.ranks import rank_ranges
from fxlens.trace.sanitize import clip
from fxlens.trace.userframes import location


def _same(x: str) -> str:
    return x


def _break_row(b: dict, ranked: bool, where) -> list:
    lib = b.get("library")  # breaks of one line in two libraries are two rows: say which is which
    fn = [Code(b["function"]), f", in {lib['file']}:{lib['line']}"] if lib else Code(b["function"])
    return [str(b["count"]), Code(where(b["file"], b["line"])), fn, clip(b["reason"], 70)] + (
        [rank_ranges(b["ranks"], limit=6)] if ranked else []
    )


def _break_details(b: dict, where, text) -> list[Line]:
    """One break's source line, then (indented, joined to it in Markdown) the library frame torch
    broke in, the fix for that frame, why the graph split, call path, explanation, hints, gb id."""
    out = [Line(""), Line([Code(where(b["file"], b["line"])), "  ", Code(b["source"] or "")])]

    def detail(s) -> None:
        out.append(Line(s, indent=4, joins=True))

    lib = b.get("library")
    if lib:  # the user's line only called into a library, which is where torch broke
        from fxlens.report.fixes import break_actions_of, describe  # the fix table, read only here

        code = f"  `{clip(lib['code'], 80)}`" if lib.get("code") else ""
        detail(f"inside {lib['file']}:{lib['line']} ({lib['function']}){code}")
        own = break_actions_of(b)  # a row read off the library frame: a switch on the caller's side
        if own != break_actions_of({"reason": b["reason"], "explanation": b.get("explanation")}):
            for a in own:
                detail(f"fix: {describe(a)}")
    if b.get("split"):
        detail(f"why {b['split']['graphs']} graphs: {text(b['split']['message'])}")
    if len(b["call_path"]) > 1:
        detail("call path: " + " -> ".join(f"{f['function']}:{f['line']}" for f in b["call_path"]))
    if b["explanation"]:
        detail(f"why: {text(clip(b['explanation'], 200))}")
    whose = "torch's hint for the library's code" if lib else "hint"
    for h in b["hints"][:2]:
        if "report an issue" not in h:
            detail(f"{whose}: {text(clip(h, 200))}")
    if b.get("gb_id"):
        detail(f"torch's graph-break id: {b['gb_id']}" + (f" ({b['url']})" if b.get("url") else ""))
    return out


def break_section(report: dict, limit: int | None = 20, where=location, text=_same) -> list[Section]:
    """Graph breaks, deduplicated by location and reason: a table, then each break's details (of
    the first LIMIT breaks; the table says how many more there are)."""
    breaks = report["graph_breaks"]
    if not breaks:
        return []
    ranked = len(report["ranks"]) > 1
    table = Table(
        ["count", "where", "function", "reason"] + (["ranks"] if ranked else []),
        [_break_row(b, ranked, where) for b in breaks],
        limit=limit,
        more="  ... {n} more break site(s) (see --json)",  # never cut silently
        fold=MAX_ROWS,
        folded="{n} more graph breaks",
    )
    lines: list = [table]
    for b in breaks[:limit]:
        lines += _break_details(b, where, text)
    return [Section("Graph breaks", lines, gloss="deduplicated by location and reason")]


def recompile_section(report: dict, where=location, text=_same) -> list[Section]:
    """Recompiles by root cause: a table, then each cause with torch's guard, the fix, and what
    `fxlens fix` measured of that fix."""
    causes = report["recompile_causes"]
    if not causes:
        return []
    ranked = len(report["ranks"]) > 1
    rows = [
        [
            str(c["count"]),
            [Code(c["function"]), " (", Code(where(c["file"], c["line"])), ")"],
            text(c["message"]),
        ]
        + ([rank_ranges(c["ranks"], limit=6)] if ranked else [])
        for c in causes
    ]
    lines: list = [Table(["recompiles", "function", "cause"] + (["ranks"] if ranked else []), rows)]
    for c in causes:
        lines.append(Line(f"{text(c['subject'])}:"))
        if c.get("guard"):
            lines.append(Line(f"torch's guard: {text(clip(c['guard'], 200))}", indent=4, joins=True))
        lines.append(Line(f"fix: {text(c['fix'])}", indent=4, joins=True))
        for m in c.get("measured") or []:  # never advice without what fxlens fix measured of it
            said = f"measured by fxlens fix: [{m['verdict']}] {text(clip(m['why'], 160))}"
            lines.append(Line(said, indent=4, joins=True))
    return [Section("Recompiles, by root cause", lines)]
