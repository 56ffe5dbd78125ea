"""The fxlens backend's kernels and fallbacks, and the report's closing notes, as document blocks:
built once, shown by the terminal, Markdown, HTML alike (fxlens.report.document)."""

from __future__ import annotations

from collections import Counter

from fxlens.report.document import MAX_ROWS, Bold, Code, Line, Para, Section, Table


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
