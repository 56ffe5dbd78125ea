"""Symbolic-shape specialisations: a dynamic dimension that became a constant, with the guards it
added and the stacks that did it (tlparse's "symbolic shape specializations" table).

torch logs a `symbolic_shape_specialization` record (symbol, its sources, the value, why, the user's
stack and torch's) when a symbol is fixed to one value, and a `guard_added` / `guard_added_fast`
record for each guard on a symbolic expression. The model keeps the first; the guard records (many
on a dynamic model, each with a 30-frame stack) are skipped when logs are read, so they are read
here, and only from the logs of ranks that specialised something. Stacks name files by interned
number (`{"str": [PATH, N]}` records), read in the same pass.
"""

from __future__ import annotations

import json
import re

from fxlens.report.document import Code, Excerpt, Line, Para, Pre, Section
from fxlens.trace.reader import GLOG_PREFIX
from fxlens.trace.userfiles import is_user_file
from fxlens.trace.userframes import short_path

_GUARD_PREFIXES = (b'{"guard_added_fast"', b'{"guard_added"', b'{"str"')


def _frames(stack, strings: dict[int, str]) -> list[dict]:
    out = []
    for f in stack or []:
        if isinstance(f, dict):
            name = f.get("filename")
            out.append(
                {
                    "file": strings.get(name, str(name)) if isinstance(name, int) else str(name),
                    "line": int(f.get("line") or 0),
                    "function": str(f.get("name") or ""),
                    "code": str(f.get("loc") or ""),
                }
            )
    return out


def _guards_and_strings(log: str, compile_ids: set[str]) -> tuple[dict[str, list[dict]], dict[int, str]]:
    """The guard records of `compile_ids` in one log (by compile id), and its interned file names."""
    guards: dict[str, list[dict]] = {}
    strings: dict[int, str] = {}
    with open(log, "rb") as f:
        for line in f:
            m = GLOG_PREFIX.match(line)
            if not m or not line[m.end() :].startswith(_GUARD_PREFIXES):
                continue
            try:
                rec = json.loads(line[m.end() :])
            except ValueError:
                continue
            if "str" in rec and isinstance(rec["str"], list) and len(rec["str"]) == 2:
                strings[rec["str"][1]] = str(rec["str"][0])
                continue
            cid = f"{rec.get('frame_id')}/{rec.get('frame_compile_id')}"
            body = rec.get("guard_added_fast") or rec.get("guard_added")
            if cid in compile_ids and isinstance(body, dict):
                guards.setdefault(cid, []).append(body)
    return guards, strings


def _user(frames: list[dict]) -> list[dict]:
    return [f for f in frames if is_user_file(f["file"])]


def specializations(session) -> list[dict]:
    """One entry per specialisation (the same one on several ranks listed once with all its ranks)."""
    merged: dict[tuple, dict] = {}
    for r in session.ranks:
        found = [
            (cid, rec)
            for cid, recs in r.by_compile.items()
            for rec in recs
            if rec.kind == "symbolic_shape_specialization"
        ]
        if not found:
            continue
        guards, strings = _guards_and_strings(r.log, {cid for cid, _ in found})
        names = {m.compile_id: m.function for m in r.metrics}
        for cid, rec in found:
            s = rec.meta.get("symbolic_shape_specialization") or {}
            symbol = str(s.get("symbol") or "")
            word = re.compile(rf"\b{re.escape(symbol)}\b") if symbol else None
            added = [
                {"expr": str(g.get("expr")), "user_stack": _frames(g.get("user_stack"), strings)}
                for g in guards.get(cid, [])
                if word and word.search(str(g.get("expr") or ""))
            ]
            user_stack = _frames(s.get("user_stack"), strings)
            key = (cid, symbol, tuple(s.get("sources") or ()), str(s.get("value")), str(s.get("reason")))
            entry = merged.setdefault(
                key,
                {
                    "compile_id": cid,
                    "function": names.get(cid, "?"),
                    "symbol": symbol,
                    "sources": [str(x) for x in s.get("sources") or []],
                    "value": str(s.get("value")),
                    "reason": str(s.get("reason")),
                    "user_stack": user_stack,
                    "stack": _frames(s.get("stack"), strings),
                    "guards": added,
                    "ranks": [],
                },
            )
            entry["ranks"].append(r.rank)
    return list(merged.values())


def _at(frames: list[dict], path) -> list:
    """ " at FILE:LINE  `CODE`" of the last frame (the code quoted, as the terminal shows it)."""

    if not frames:
        return []
    f = frames[-1]
    return [" at ", Code(f"{path(f['file'])}:{f['line']}"), f"  `{f['code'].strip()}`" if f["code"] else ""]


def _frame_text(frames: list[dict], path) -> str:
    return "\n".join(
        f"{path(f['file'])}:{f['line']} in {f['function']}"
        + (f"\n    {f['code'].strip()}" if f["code"] else "")
        for f in frames
    )


def _stacks(s: dict, path):
    """The whole stacks of a specialisation, folded (Markdown and HTML; the terminal shows none)."""

    blocks = [Para("The user's stack:"), Pre(_frame_text(s["user_stack"], path) or "(none logged)")]
    blocks += [Para("torch's stack:"), Pre(_frame_text(s["stack"], path) or "(none logged)")]
    return Excerpt("", f"{s['symbol']} = {s['value']}: the user's stack and torch's", blocks=blocks)


def specialization_section(report: dict, limit: int | None = 6, path=short_path) -> list:
    """Each specialisation (the first LIMIT), where the user's code caused it, the guards it added
    (the first 3) and its stacks (Markdown and HTML only); PATH writes a file."""

    specs = report.get("specializations") or []
    if not specs:
        return []
    lines: list = []
    for s in specs[:limit]:
        src = ", ".join(s["sources"]) or s["symbol"]
        said = [": ", Code(src), " (", Code(s["symbol"]), ") = ", Code(s["value"]), f" [{s['reason']}]"]
        at = _at(_user(s["user_stack"]) or s["user_stack"], path)
        lines.append(Line([Code(s["compile_id"]), " ", Code(s["function"]), *said, *at]))
        for g in s["guards"][:3]:
            added = ["guard added: ", Code(g["expr"]), *_at(_user(g["user_stack"]), path)]
            lines.append(Line(added, 4, joins=True))
        lines.append(_stacks(s, path))
    if len(specs) > limit:
        lines.append(Line(f"... {len(specs) - limit} more (see --json specializations)"))
    return [Section("Shape specialisations", lines, gloss="a dynamic dimension fixed to one value")]
