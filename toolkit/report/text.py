"""The report as text: `render_text(report)`, the tables `fxlens run` and `fxlens report` print.

Each section is a builder of document blocks (fxlens.report.document) that Markdown and HTML render
too (fxlens.report.formats), listed here most important first with the terminal's limits;
`text_lines` renders them.
"""

from __future__ import annotations

from fxlens.report.blocks import block_section
from fxlens.report.breaksrecompiles import break_section, recompile_section
from fxlens.report.coldstart import cache_section
from fxlens.report.compilefixes import compile_fix_section
from fxlens.report.compiles import restart_section
from fxlens.report.distributed import distributed_sections
from fxlens.report.document import text_lines
from fxlens.report.failures import failure_section
from fxlens.report.fix_result import FixResult
from fxlens.report.kernelcompile import kernel_compile_section
from fxlens.report.linetimes import line_time_section
from fxlens.report.outputcode import output_code_section
from fxlens.report.overview import compile_time_section, graph_section, head_findings, head_section
from fxlens.report.passes import pass_section
from fxlens.report.sections import backend_blocks, limit_hit_section, note_blocks
from fxlens.report.special_graphs import special_sections
from fxlens.report.specializations import specialization_section
from fxlens.report.stacktrie import stack_trie_section
from fxlens.trace.sanitize import clean, for_terminal

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
        *text_lines(failure_section(report)),  # folded across ranks (fxlens.report.failures)
        # export issues, DDP splits, compiled autograd, AOTInductor, unknown kinds
        *text_lines(special_sections(report)),
        *text_lines(graph_section(report, limit)),
        *text_lines(compile_time_section(report)),  # the slowest compiles, cold start
        *text_lines(cache_section(report["compile_times"])),
        *text_lines(block_section(report)),  # repeated blocks, regional compilation (report.blocks)
        *text_lines(line_time_section(report)),  # Dynamo's seconds by source line (report.linetimes)
        *text_lines(pass_section(report)),  # the backend's seconds by pass (fxlens.report.passes)
        *text_lines(compile_fix_section(report)),  # re-traces per shape, functions to skip
        *text_lines(kernel_compile_section(report)),  # inductor seconds by kernel (Triton)
        *text_lines(restart_section(report)),  # restarts, their reasons whole (fxlens.report.compiles)
        *text_lines(specialization_section(report)),
        *text_lines(stack_trie_section(report)),
        *text_lines(output_code_section(report)),
        *text_lines(backend_blocks(report, limit)),
        *text_lines(note_blocks(report)),
        *_nothing_compiled(report),
    ]
    return for_terminal("\n".join(out).rstrip() + "\n")
