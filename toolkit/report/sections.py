"""Report sections built once as document blocks and shown by the terminal, Markdown and HTML alike
(fxlens.report.document): the frames that hit the recompile limit, the fxlens backend's kernels
and fallbacks, the closing notes. A builder is given what differs between outputs (a limit, how to
write a path), never a format."""

from __future__ import annotations

from collections import Counter

from fxlens.report.document import MAX_ROWS, Bold, Code, Line, Para, Section, Table
from fxlens.report.ranks import fold_ranks
from fxlens.trace.userframes import location


def limit_hit_section(report: dict, where=location) -> list[Section]:
    """The frames that hit the recompile limit (from then on they run eagerly, and nothing says so),
    one row per frame with its ranks; WHERE(file, line) writes the location."""
    hits = report.get("recompile_limit_hits") or []
    if not hits:
        return []
    ranked = len(report.get("ranks") or []) > 1
    rows = [
        [Code(h["function"]), where(h["file"], h["line"]), f"{h.get('limit_type')}={h['limit']}"]
        + ([str(h["rank"])] if ranked else [])
        for h in fold_ranks([{**h, "compile_id": ""} for h in hits])
    ]
    table = Table(["function", "where", "limit"] + (["rank"] if ranked else []), rows)
    return [Section("Recompile limit hits", [table], gloss="these frames now run EAGERLY, silently")]


def backend_blocks(report: dict, limit: int = 20) -> list:
    """The kernels fxlens's backend generated (the terminal shows LIMIT of them) and the ops it ran
    as ATen calls."""
    out: list = []
    if k := report.get("kernels"):
        rows = [
            [
                Code(x["compile_id"]),
                Code(x["name"]),
                str(len(x["ops"])),
                str(x["bytes_read"]),
                str(x["bytes_written"]),
            ]
            for x in k
        ]
        table = Table(
            ["compile id", "kernel", "ops", "bytes read", "bytes written"],
            rows,
            limit=limit,
            more="  ... {n} more kernel(s) (see --json)",
            fold=MAX_ROWS,
            folded="{n} more kernels",
        )
        read, written = sum(x["bytes_read"] for x in k), sum(x["bytes_written"] for x in k)
        out.append(
            Section("fxlens kernels", [table], tail=f"{len(k)} (bytes read {read}, written {written})")
        )
    if report.get("fallbacks"):
        fb = Counter()
        for f in report["fallbacks"]:
            fb[f["op"]] += f["count"]
        ops = ", ".join(f"{op} x{n}" for op, n in fb.most_common())
        out.append(Para([Bold("fxlens fallbacks (ops run as ATen calls): "), Code(ops)]))
    return out


def note_blocks(report: dict, text=str) -> list:
    """What fxlens noted on the way (events with a summary, skipped files), each string through
    TEXT (Markdown and HTML shorten paths with it)."""
    notes = [f"[{e.get('event')}] {e['summary']}" for e in report.get("events") or [] if e.get("summary")]
    notes += [f"note: {s}" for s in report.get("skipped") or []]
    return [Section("", [Line(text(x), indent=0) for x in notes])] if notes else []
