"""Compile failures, and frames torch gave up on, folded across ranks: a thousand ranks that failed
the same way are one block with their ranks as ranges, not a thousand blocks.

Two failures are the same when they differ only in the rank: the same compile id, function, place,
type, and torch's text once each rank's own number is replaced ("rank 5: ..." on rank 5 and
"rank 6: ..." on rank 6 are one failure). The JSON report keeps one entry per rank; text, Markdown
and HTML show the folded blocks, each with the text of its first rank.
"""

from __future__ import annotations

import re

from fxlens.report.document import Code, Excerpt, Line, Section
from fxlens.report.ranks import rank_ranges, without_rank
from fxlens.trace.sanitize import clip
from fxlens.trace.userframes import location

_COMPILER_ERROR = re.compile(r"(?:^|\s|:)(?:fatal )?error\b:?", re.I)


def fold(rows: list[dict], fields: tuple[str, ...]) -> list[dict]:
    """Rows equal in `fields` once their rank's number is taken out, merged into one row (the first
    rank's) with `ranks`: every rank it happened on. Order: the first appearance of each."""
    merged: dict[tuple, dict] = {}
    for row in rows:
        key = tuple(without_rank(str(row.get(f) or ""), row.get("rank")) for f in fields)
        if key not in merged:
            merged[key] = {**row, "ranks": []}
        merged[key]["ranks"].append(row.get("rank"))
    return list(merged.values())


def fold_failures(report: dict) -> list[dict]:
    """The report's failures folded across ranks (see the module docstring)."""
    fields = ("compile_id", "function", "file", "line", "fail_type", "fail_reason", "source")
    return fold(report.get("failures") or [], fields)


def fold_eager_frames(report: dict) -> list[dict]:
    """The frames torch gave up on, folded across ranks the same way."""
    fields = ("compile_id", "function", "file", "line", "reason", "explanation", "source")
    return fold(report.get("eager_frames") or [], fields)


def library_frame(e: dict) -> dict | None:
    """The frame torch gave up on (`eager_frames[].frame`) when it is a library's, called from the
    user's line; None when it is the user's own frame (or the record has none)."""
    frame = e.get("frame")
    return frame if frame and frame["file"] != e["file"] else None


def eager_frame_name(e: dict, where: str) -> str:
    """`wrapper (transformers/utils/generic.py:1157, called from train.py:22)` for a library's frame
    torch gave up on, `f (train.py:11)` for the user's own; `where` is the user's place, formatted."""
    frame = library_frame(e)
    if frame:
        return f"{frame['function']} ({frame['file']}:{frame['line']}, called from {where})"
    return f"{e['function']} ({where})"


def failure_head(lines: list[str], most: int = 6) -> list[str]:
    """The lines of a failure that say what went wrong: the first, then the compiler's first
    `error:` line with the generated code and caret it prints after it (a C++ or Triton compile
    error's 2000 lines are mostly the command and include notes)."""
    if not lines:
        return []
    at = next((i for i, ln in enumerate(lines[1:], 1) if _COMPILER_ERROR.search(ln)), None)
    if at is None:
        return lines[:most]
    return [lines[0], *lines[at : at + 3]]


def on_ranks(ranks: list, ranked: bool) -> str:
    """ " on ranks 0-999, 1001-1023" (" on rank 5") for a job of several ranks, else ""."""
    if not ranked:
        return ""
    return f" on {'rank' if len(ranks) == 1 else 'ranks'} {rank_ranges(ranks, limit=6)}"


def _same(x: str) -> str:
    return x


def whole_text(text: str, most: int = 200) -> str:
    """TEXT whole, up to MOST lines (then a line saying how many more the JSON holds)."""
    lines = (text or "").rstrip("\n").split("\n")
    cut = [f"... {len(lines) - most} more lines (see --json)"] if len(lines) > most else []
    return "\n".join(lines[:most] + cut)


def _failure(f: dict, ranked: bool, where, text) -> list:
    """One failed compile: where, its type, and the first lines of torch's text (Markdown and HTML:
    the whole text, folded under its first line)."""
    on = on_ranks(f["ranks"], ranked)
    at = [Code(f["compile_id"]), "  ", Code(f["function"]), " (", Code(where(f["file"], f["line"]))]
    out: list = [Line([*at, f")  {f['fail_type']}{on}"])]
    if f.get("source"):
        out.append(Line(text(f["source"]), 4, joins=True))
    lines = [ln for ln in (f["fail_reason"] or "").split("\n") if ln.strip()]
    head = failure_head(lines)
    summary = "torch's full text" + (f": {text(clip(head[0], 160))}" if head else "")
    if ranked and len(f["ranks"]) > 1:
        whose = f"rank {f['ranks'][0]}'s text (the others differ at most in their rank):"
        out.append(Line(whose, 4, joins=True))
        summary = f"rank {f['ranks'][0]}'s {summary} (ranks {rank_ranges(f['ranks'], limit=6)} alike)"
    left = len(lines) - len(head)
    more = f"| ... {left} more line(s) of torch's text (see --json)" if left > 0 else ""
    out.append(Excerpt(text(whole_text(f["fail_reason"])), summary, head, more, prefix="| ", clip=160))
    return out


def _eager_frame(e: dict, ranked: bool, where, text) -> list[Line]:
    name = eager_frame_name(e, where(e["file"], e["line"]))
    out = [
        Line(
            [Code(e["compile_id"]), f"  {name}  {text(clip(e['reason'], 100))}{on_ranks(e['ranks'], ranked)}"]
        )
    ]
    if e.get("source"):
        out.append(Line(text(e["source"]), 4, joins=True))
    if lib := e.get("library"):
        out.append(
            Line(f"inside {lib['file']}:{lib['line']} ({lib['function']})  `{lib['code']}`", 4, joins=True)
        )
    if e.get("explanation"):
        out.append(Line(f"why: {text(clip(e['explanation'], 200))}", 4, joins=True))
    return out


def failure_section(report: dict, where=location, text=_same) -> list[Section]:
    """Each failed compile (once for all the ranks it failed on alike): where (the user's line), and
    the first lines of torch's own text (the JSON keeps all of it, per rank); then the frames torch
    gave up on. WHERE (file, line) writes a location, TEXT shortens free text."""
    ranked = len(report.get("ranks") or []) > 1
    out = []
    if failures := fold_failures(report):
        lines = [x for f in failures for x in _failure(f, ranked, where, text)]
        out.append(Section("Compile failures", lines))
    if eager := fold_eager_frames(report):
        lines = [x for e in eager for x in _eager_frame(e, ranked, where, text)]
        out.append(Section("Frames torch gave up on", lines, gloss="they run eagerly from that compile on"))
    return out


# torch's failure type when a graph break was raised instead of split at (fullgraph=True, or
# torch._dynamo.config.error_on_graph_break): torch.compile(fullgraph=True) refusing the code
_BREAK_RAISED = ("Unsupported", "UserError")


def compile_failed(report: dict) -> dict | None:
    """The compile failures that raised to the script, as one verdict: the compiled object WAS called
    (its first call raised), so it is a compile failure, never "the compiled object was never
    called". `nothing_compiled`: no graph at all; then `sites` are the torch.compile calls
    (`file:line`) whose objects failed. None when no compile failed."""
    fails = report.get("failures") or []
    if not fails:
        return None
    nothing = not report.get("graphs")
    calls = [e for e in report.get("events") or [] if e.get("event") == "compile_call"]
    first = fails[0]
    at = location(first["file"], first["line"])
    raised_break = any(f.get("fail_type") in _BREAK_RAISED for f in fails)
    if raised_break:
        why = "a graph break is an error under `fullgraph=True`"
        fix = (
            f"remove the graph break at {at} (torch's text of the failure says what broke), or drop "
            "`fullgraph=True` so torch splits the graph there"
        )
    else:
        why = "the compile raised"
        fix = f"see the failure at {at} below; `fxlens bisect SCRIPT` finds the stage at fault"
    first_line = (first.get("fail_reason") or "").strip().split("\n")[0]
    message = (
        f"the compiled `{first['function']}` was called and its compile failed "
        f"({first.get('fail_type')} at {at}: {clip(first_line, 100)}); {why}"
        + (", so nothing ran compiled" if nothing else "")
    )
    return {
        "compile_ids": [f["compile_id"] for f in fails],
        "functions": sorted({f["function"] for f in fails}),
        "fullgraph_break": raised_break,
        "nothing_compiled": nothing,
        "sites": [f"{c.get('file')}:{c.get('line')}" for c in calls] if nothing else [],
        "message": message,
        "fix": fix,
    }
