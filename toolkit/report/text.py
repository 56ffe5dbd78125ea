"""The report as text: `render_text(report)`, the tables `fxlens run` and `fxlens report` print.

One function per section, most important first; each returns its lines (none when the section is
empty), and `render_text` joins them.
"""

from __future__ import annotations

from fxlens.report.blocks import block_lines
from fxlens.report.breaksrecompiles import break_section, recompile_section
from fxlens.report.coldstart import cache_outcomes, cache_section, cold_start_lines
from fxlens.report.compiles import TIME_COLUMNS, compile_lines
from fxlens.report.distributed import distributed_sections
from fxlens.report.document import text_lines
from fxlens.report.failures import failure_lines
from fxlens.report.fix_result import FixResult
from fxlens.report.linetimes import line_time_lines
from fxlens.report.outputcode import output_code_lines
from fxlens.report.overview import graph_section, head_findings, head_section
from fxlens.report.passes import pass_section
from fxlens.report.sections import backend_blocks, limit_hit_section, note_blocks
from fxlens.report.special_graphs import special_sections
from fxlens.report.specializations import specialization_lines
from fxlens.report.stacktrie import stack_trie_section
from fxlens.report.texttable import tabulate
from fxlens.trace.sanitize import clean, for_terminal


def _rank_col(report: dict) -> bool:
    return len(report["ranks"]) > 1


def _secs(v) -> str:
    return "-" if v is None else f"{v:.2f}"


def _compile_time_lines(report: dict) -> list[str]:
    """The slowest compiles with torch's breakdown: Dynamo, the backend (of which inductor and its
    code generation), the backward graph's compile, and cache hits/misses."""
    ct = report["compile_times"]
    if not ct["per_compile"]:
        return []
    ranked = len({m["rank"] for m in ct["per_compile"]}) > 1
    slow = sorted(ct["per_compile"], key=lambda m: -(m["total_s"] or 0))
    if ranked:  # one row per compile id and function: its slowest rank (`slow` is slowest first)
        best: dict = {}
        for m in slow:
            best.setdefault((m["compile_id"], m["function"]), m)
        slow = list(best.values())
    slow = slow[:5]
    rows = []
    for m in slow:
        cache = cache_outcomes(m)
        rows.append(
            ([m["rank"]] if ranked else [])
            + [
                m["compile_id"],
                m["function"],
                _secs(m["total_s"]),
                _secs(m.get("dynamo_s")),
                _secs(m["backend_s"]),
                _secs(m.get("inductor_s")),
                _secs(m.get("backward_s")),
                ", ".join(f"{k} {v}" for k, v in cache.items()) or "-",
                m["guard_count"],
            ]
        )
    bwd = ct.get("backward_s") or 0
    head = f"Compile time: {ct['total_s']:.2f} s total over {len(ct['per_compile'])} compile(s)"
    head += f" (backward graphs {bwd:.2f} s of it)" if bwd else ""
    shown = f"; slowest {len(slow)} (all: see --json):" if len(ct["per_compile"]) > len(slow) else ":"
    headers = (["rank"] if ranked else []) + [*TIME_COLUMNS, "cache", "guards"]
    return [
        *cold_start_lines(ct),
        head + shown,
        tabulate(rows, headers=headers, tablefmt="simple"),
        "",
        *text_lines(cache_section(ct)),
    ]


# any of these in a report is something compiled (or an attempt to): without them, say nothing was
_COMPILED = "graphs graph_breaks failures headlines export_issues aot_inductor special_graphs".split()


def _nothing_compiled(report: dict) -> list[str]:
    return [] if any(report.get(k) for k in _COMPILED) else ["No graphs were compiled."]


def _fix_lines(report: dict) -> list[str]:
    """`fxlens fix`'s results when the session holds them (also after a Ctrl-C: each was appended
    as it was measured)."""
    found = FixResult.from_events(report.get("events") or [])
    return ["Fixes tried (fxlens fix):", *found.lines(), ""] if found else []


def render_text(report: dict, limit: int = 20) -> str:
    """The human report: tabulate tables, most important first.

    Every string from the trace is shown with its control characters escaped (before the tables
    are laid out, so columns still line up), and the whole text once more as a backstop.
    """
    report = clean({k: v for k, v in report.items() if k != "guards"})  # guards: render_guards
    out = [
        *text_lines(head_section(report)),  # counts, backend (fxlens.report.overview)
        *text_lines(head_findings(report)),  # rank groups or divergence, headlines
        # collectives (a hang risk), parity, runtime, execution order
        *text_lines(distributed_sections(report)),
        *text_lines(break_section(report, limit)),  # fxlens.report.breaksrecompiles
        *text_lines(recompile_section(report)),
        *text_lines(limit_hit_section(report)),
        *_fix_lines(report),
        *failure_lines(report),  # folded across ranks (fxlens.report.failures)
        # export issues, DDP splits, compiled autograd, AOTInductor, unknown kinds
        *text_lines(special_sections(report)),
        *text_lines(graph_section(report, limit)),
        *_compile_time_lines(report),
        *block_lines(report),  # repeated blocks and regional compilation (fxlens.report.blocks)
        *line_time_lines(report),  # Dynamo's seconds by source line (fxlens.report.linetimes)
        *text_lines(pass_section(report)),  # the backend's seconds by pass (fxlens.report.passes)
        *compile_lines(report),  # restarts, their reasons whole (fxlens.report.compiles)
        *specialization_lines(report),
        *text_lines(stack_trie_section(report)),
        *output_code_lines(report),
        *text_lines(backend_blocks(report, limit)),
        *text_lines(note_blocks(report)),
        *_nothing_compiled(report),
    ]
    return for_terminal("\n".join(out).rstrip() + "\n")
