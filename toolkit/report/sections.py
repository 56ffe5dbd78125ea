"""Report sections as document blocks (fxlens.report.document): the frames that hit the recompile
limit, the fxlens backend's kernels and fallbacks, the closing notes, which every output shows; and
the sections one output shows alone (how the script was run, the guards, the failed guards of each
recompile, `fxlens fix`'s and `fxlens doctor`'s results, the environment; the terminal's "nothing
was compiled"). A builder is given what differs between outputs (a limit, how to write a path),
never a format; the table of sections (fxlens.report.contents) says which output shows which."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from fxlens.report.doctor_result import DoctorResult
from fxlens.report.document import (
    MAX_ROWS,
    Bold,
    Bullets,
    Code,
    Details,
    Heading,
    Line,
    Para,
    Pre,
    Section,
    Table,
    environment_blocks,
)
from fxlens.report.fix_result import FixResult
from fxlens.report.markup import PathShortener, command_line, environment
from fxlens.report.overview import clip_code
from fxlens.report.ranks import fold_ranks, rank_ranges
from fxlens.trace.sanitize import clip
from fxlens.trace.userframes import location


def limit_hit_section(report: dict, where=location) -> list[Section]:
    """The frames that hit the recompile limit (from then on they run eagerly, and nothing says so),
    one row per frame with its ranks; WHERE(file, line) writes the location."""
    hits = report.get("recompile_limit_hits") or []
    if not hits:
        return []
    ranked = len(report.get("ranks") or []) > 1
    rows = [
        [Code(h["function"]), Code(where(h["file"], h["line"])), f"{h.get('limit_type')}={h['limit']}"]
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


# -- shown by Markdown and HTML only ---------------------------------------------------------------


def title_heading(report: dict) -> list:
    """The document's title: the script's (else the trace's) name."""
    src = report.get("source") or {}
    return [Heading(2, f"fxlens report: {Path(src.get('script') or src.get('path') or 'trace').name}")]


def run_facts(report: dict, ps: PathShortener) -> list:
    """How the script was run (the terminal's report follows the run, which said it)."""
    src = report.get("source") or {}
    facts = []
    if src.get("script"):  # the whole command: script arguments, -m, switches
        facts.append(["command: ", Code(command_line("run", src, ps))])
    if src.get("exit_code") is not None:
        facts.append(["exit status: ", Code(str(src["exit_code"]))])
    return [Bullets(facts)] if facts else []


def more_break_details(report: dict) -> list:
    """The graph-break section details MAX_ROWS breaks: how many more there are (said, never silent)."""
    more = len(report["graph_breaks"]) - MAX_ROWS
    return [Para(f"Details of {more} more break site(s): see --json.")] if more > 0 else []


def failed_guard_blocks(report: dict, text=str) -> list:
    """Under the recompiles by root cause: each recompile's failed guards, folded."""
    if not report["recompile_causes"]:  # no recompile section to follow
        return []
    failed = [
        [Code(r["compile_id"]), Code(r["function"]), Code(text(clip("; ".join(r["failed_guards"]), 300)))]
        for r in report["recompiles"]
    ]
    table = Table(["compile id", "function", "failed guards"], failed)
    return [Details(f"{len(failed)} recompile(s): failed guards", [table])]


def guard_blocks(report: dict, text=str) -> list:
    """Each compile's guards, folded (the same guards on many ranks once, the ranks as ranges)."""
    guards = report.get("guards") or []
    if not guards:
        return []
    by_text: dict[tuple, list] = {}
    for g in guards:
        by_text.setdefault((g["compile_id"], tuple(g["guards"])), []).append(g["rank"])
    code = "\n".join(
        f"# {cid}"
        + (f" rank(s) {rank_ranges(ranks, limit=6)}" if any(r is not None for r in ranks) else "")
        + "\n"
        + "\n".join(lines)
        for (cid, lines), ranks in by_text.items()
    )
    return [Details(f"Guards of {len(guards)} compile(s)", [Pre(text(clip_code(code)))])]


def fix_blocks(report: dict, ps: PathShortener) -> list:
    """`fxlens fix`'s results, when the session holds them (its result's blocks)."""
    found = FixResult.from_events(report.get("events") or [])
    return found.blocks(ps) if found else []


def doctor_blocks(report: dict, ps: PathShortener) -> list:
    """`fxlens doctor`'s result, when the session holds one (its memory by cause among them)."""
    found = DoctorResult.from_events(report.get("events") or [])
    return found.blocks(ps) if found else []


def environment_section(report: dict, env: dict | None) -> list:
    """The environment every bug report ends with; ENV None: read now (imports torch)."""
    logs = [Path(x) for x in ((report.get("source") or {}).get("logs") or [])]
    return environment_blocks(env if env is not None else environment(logs, report.get("events")))


# -- shown by the terminal only --------------------------------------------------------------------


def fix_lines_section(report: dict) -> list:
    """`fxlens fix`'s results when the session holds them (also after a Ctrl-C: each was appended
    as it was measured), as the lines `fxlens fix` printed."""
    found = FixResult.from_events(report.get("events") or [])
    return [Section("Fixes tried (fxlens fix)", [Line(x, 0) for x in found.lines()])] if found else []


# any of these in a report is something compiled (or an attempt to): without them, say nothing was
_COMPILED = "graphs graph_breaks failures headlines export_issues aot_inductor special_graphs".split()


def nothing_compiled(report: dict) -> list:
    return [] if any(report.get(k) for k in _COMPILED) else [Para("No graphs were compiled.")]
