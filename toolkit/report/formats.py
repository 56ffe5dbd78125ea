"""`fxlens report --format markdown|html`: the report as something to paste into a bug.

Built as document blocks (fxlens.report.document), so both formats hold the same content and every
string from the trace is escaped by the renderer. File paths are relative to the script's folder,
the home folder is `~`; long graphs and guard lists are collapsible sections.
"""

from __future__ import annotations

from pathlib import Path

from fxlens.report.blocks import block_section
from fxlens.report.breaksrecompiles import break_section, recompile_section
from fxlens.report.coldstart import cache_section
from fxlens.report.compilefixes import compile_fix_section
from fxlens.report.compiles import restart_section
from fxlens.report.distributed import distributed_sections
from fxlens.report.doctor_result import DoctorResult
from fxlens.report.document import (
    MAX_ROWS,
    Bullets,
    Code,
    Details,
    Heading,
    Para,
    Pre,
    Table,
    environment_blocks,
    to_html,
    to_markdown,
)
from fxlens.report.failures import failure_section
from fxlens.report.fix_result import FixResult
from fxlens.report.kernelcompile import kernel_compile_section
from fxlens.report.linetimes import line_time_section
from fxlens.report.markup import PathShortener, command_line, environment
from fxlens.report.outputcode import output_code_section
from fxlens.report.overview import compile_time_section, graph_section, head_findings, head_section
from fxlens.report.passes import pass_section
from fxlens.report.ranks import rank_ranges
from fxlens.report.sections import backend_blocks, limit_hit_section, note_blocks
from fxlens.report.special_graphs import special_sections
from fxlens.report.specializations import specialization_section
from fxlens.report.stacktrie import stack_trie_section
from fxlens.trace.sanitize import clip
from fxlens.trace.userfiles import is_user_file
from fxlens.trace.userframes import shown_path

#: lines of guards shown
MAX_CODE_LINES = 200


def _clip(text: str, limit: int = MAX_CODE_LINES) -> str:
    lines = text.split("\n")
    if len(lines) <= limit:
        return text
    return "\n".join(
        lines[:limit] + [f"... {len(lines) - limit} more lines (fxlens report --guards / the TUI)"]
    )


def _path(ps: PathShortener, file: str, line) -> str:
    return f"{ps.path(file)}:{line}" if file else "?"


def _where(ps: PathShortener, file: str, line) -> Code:
    return Code(_path(ps, file, line))


def _run_facts(report: dict, ps: PathShortener) -> list:
    """How the script was run (Markdown and HTML only: the terminal's report follows the run)."""
    src = report.get("source") or {}
    facts = []
    if src.get("script"):  # the whole command: script arguments, -m, switches
        facts.append(["command: ", Code(command_line("run", src, ps))])
    if src.get("exit_code") is not None:
        facts.append(["exit status: ", Code(str(src["exit_code"]))])
    return [Bullets(facts)] if facts else []


def _break_blocks(report: dict, ps: PathShortener) -> list:
    """Graph breaks (fxlens.report.breaksrecompiles): the details of the first MAX_ROWS."""
    out: list = break_section(report, MAX_ROWS, lambda file, line: _path(ps, file, line), ps.text)
    if len(report["graph_breaks"]) > MAX_ROWS:  # said, never silent
        out.append(
            Para(f"Details of {len(report['graph_breaks']) - MAX_ROWS} more break site(s): see --json.")
        )
    return out


def _recompile_blocks(report: dict, ps: PathShortener) -> list:
    """Recompiles by root cause, the failed guards of each recompile folded, recompile limit hits."""
    out: list = recompile_section(report, lambda file, line: _path(ps, file, line), ps.text)
    if out:
        failed = [
            [
                Code(r["compile_id"]),
                Code(r["function"]),
                Code(ps.text(clip("; ".join(r["failed_guards"]), 300))),
            ]
            for r in report["recompiles"]
        ]
        out.append(
            Details(
                f"{len(failed)} recompile(s): failed guards",
                [Table(["compile id", "function", "failed guards"], failed)],
            )
        )
    return out + limit_hit_section(report, lambda file, line: _where(ps, file, line))


def _guard_blocks(report: dict, ps: PathShortener) -> list:
    guards = report.get("guards") or []
    if not guards:
        return []
    by_text: dict[tuple, list] = {}  # the same guards on many ranks: once, with the ranks as ranges
    for g in guards:
        by_text.setdefault((g["compile_id"], tuple(g["guards"])), []).append(g["rank"])
    text = "\n".join(
        f"# {cid}"
        + (f" rank(s) {rank_ranges(ranks, limit=6)}" if any(r is not None for r in ranks) else "")
        + "\n"
        + "\n".join(lines)
        for (cid, lines), ranks in by_text.items()
    )
    return [Details(f"Guards of {len(guards)} compile(s)", [Pre(ps.text(_clip(text)))])]


def _fix_blocks(report: dict, ps: PathShortener) -> list:
    """`fxlens fix`'s results, when the session holds them (its result's blocks)."""
    found = FixResult.from_events(report.get("events") or [])
    return found.blocks(ps) if found else []


def _doctor_blocks(report: dict, ps: PathShortener) -> list:
    """`fxlens doctor`'s result, when the session holds one (its result's blocks)."""
    found = DoctorResult.from_events(report.get("events") or [])
    return found.blocks(ps) if found else []


def report_blocks(report: dict, session=None, env: dict | None = None) -> list:
    """The report as document blocks.

    Args:
        report: the dict of `build_report`.
        session: the Session it was built from; when given, each graph's code is included.
        env: environment() of the run; None: computed now (imports torch to name the device).
    """
    src = report.get("source") or {}
    ps = PathShortener(src.get("script"))
    name = Path(src.get("script") or src.get("path") or "trace").name

    def where(file: str, line) -> str:
        return _path(ps, file, line)

    def ps_path(file: str) -> str:  # the user's files as the rest of the document writes them
        return ps.path(file) if is_user_file(file) else shown_path(file)

    out = [
        Heading(2, f"fxlens report: {name}"),
        *head_section(report),  # counts, backend override (fxlens.report.overview)
        *_run_facts(report, ps),
        *head_findings(report, ps.text),  # rank groups or divergence, headlines
        *distributed_sections(report),  # collectives (a hang risk), parity, runtime, order
        *_break_blocks(report, ps),
        *_recompile_blocks(report, ps),
        *_fix_blocks(report, ps),
        *failure_section(report, where, ps.text),  # folded across ranks (fxlens.report.failures)
        *special_sections(report),  # export issues, special graphs, unknown kinds
        *graph_section(report, None, where, ps.text, session.artifact if session else None),
        *_guard_blocks(report, ps),
        *compile_time_section(report, None),  # the slowest compiles (fxlens.report.overview)
        *cache_section(report["compile_times"]),
        *block_section(report, None),  # repeated blocks and regional compilation
        # Dynamo's seconds by source line (fxlens.report.linetimes)
        *line_time_section(report, path=ps_path, text=ps.text),
        *pass_section(report, limit=15),  # the backend's seconds by pass (fxlens.report.passes)
        *compile_fix_section(report),  # re-traces per shape, functions to skip (fxlens.report.compilefixes)
        *kernel_compile_section(report, limit=25),  # inductor seconds by kernel (fxlens.report.kernelcompile)
        *restart_section(report, MAX_ROWS, ps.text),  # restarts, their reasons whole
        *specialization_section(report, MAX_ROWS, ps.path),
        *stack_trie_section(report, 400, ps.text),
        *output_code_section(report, MAX_ROWS, ps.text, session.artifact if session else None),
        *backend_blocks(report),
        *note_blocks(report, ps.text),
        *_doctor_blocks(report, ps),  # doctor's memory by cause (fxlens.report.memoryblocks)
    ]
    logs = [Path(x) for x in (src.get("logs") or [])]
    out += environment_blocks(env if env is not None else environment(logs, report.get("events")))
    return out


def render_markdown(report: dict, session=None, env: dict | None = None) -> str:
    """The report as GitHub-flavoured Markdown, ready to paste into an issue."""
    return to_markdown(report_blocks(report, session, env))


def render_html(report: dict, session=None, env: dict | None = None) -> str:
    """The report as one self-contained HTML page (no script, no network)."""
    name = Path((report.get("source") or {}).get("script") or "trace").name
    return to_html(report_blocks(report, session, env), f"fxlens report: {name}")
