"""The report's contents: one table of its sections, most important first, from which the terminal
(`render_text`, fxlens.report.text) and Markdown and HTML (`report_blocks`, fxlens.report.formats)
are both produced. Adding a section to the report is adding a row.

A row is a builder of document blocks (fxlens.report.document) and how each output calls it: the
arguments it takes from the output (how a location, a file or free text is written, the Session's
artifact lookup: an `Output` holds each output's), and its limit in each output (the builder's own
default, a number, the report's `--limit`, or HIDDEN: that output does not show the section).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

from fxlens.report.blocks import block_section
from fxlens.report.breaksrecompiles import break_section, recompile_section
from fxlens.report.coldstart import cache_section
from fxlens.report.compilefixes import compile_fix_section
from fxlens.report.compiles import restart_section
from fxlens.report.distributed import distributed_sections
from fxlens.report.document import MAX_ROWS
from fxlens.report.failures import failure_section
from fxlens.report.kernelcompile import kernel_compile_section
from fxlens.report.linetimes import line_time_section
from fxlens.report.markup import PathShortener
from fxlens.report.outputcode import output_code_section
from fxlens.report.overview import compile_time_section, graph_section, head_findings, head_section
from fxlens.report.passes import pass_section
from fxlens.report.sections import (
    backend_blocks,
    doctor_blocks,
    environment_section,
    failed_guard_blocks,
    fix_blocks,
    fix_lines_section,
    guard_blocks,
    limit_hit_section,
    more_break_details,
    note_blocks,
    nothing_compiled,
    run_facts,
    title_heading,
)
from fxlens.report.special_graphs import special_sections
from fxlens.report.specializations import specialization_section
from fxlens.report.stacktrie import stack_trie_section
from fxlens.trace.userframes import location, short_path, shown_path


def _same(x: str) -> str:
    return x


@dataclass(frozen=True)
class Output:
    """What one output gives the builders (the terminal's: the defaults): LIMIT (`--limit`, the
    terminal's rows), WHERE(file, line) a location, PATH(file) a file of the user's, FILE(file) any
    file (a library's as its package path), TEXT(s) free text (Markdown and HTML shorten the paths
    in it), ARTIFACT(compile id, kind, rank) a payload (None: no code shown), SHORTENER the
    PathShortener of the Markdown-only sections, ENV the environment (None: read when shown)."""

    limit: int | None = 20
    where: Callable = location
    path: Callable = short_path
    file: Callable = shown_path
    text: Callable = _same
    artifact: Callable | None = None
    shortener: PathShortener | None = None
    env: dict | None = None


@dataclass(frozen=True)
class Of:
    """An argument a row takes from the output: its `Output` field NAME."""

    name: str


WHERE, PATH, FILE, TEXT, ARTIFACT, SHORTENER, ENV = (
    Of(n) for n in ("where", "path", "file", "text", "artifact", "shortener", "env")
)
LIMIT = Of("limit")  # a limit column: the report's --limit


class Shown(Enum):
    OWN = "the builder's own default limit"
    HIDDEN = "not shown by this output"


OWN, HIDDEN = Shown.OWN, Shown.HIDDEN


@dataclass(frozen=True)
class Row:
    """One section: BUILD(report, **keywords), ARGS the keywords it takes from the output, and its
    limit in the terminal and in Markdown/HTML (OWN, a number or None, LIMIT, or HIDDEN)."""

    build: Callable[..., list]
    args: dict[str, Of] = field(default_factory=dict)
    terminal: Shown | Of | int | None = OWN
    markdown: Shown | Of | int | None = OWN  # Markdown and HTML

    def blocks(self, report: dict, out: Output, limit) -> list:
        kw = {k: getattr(out, of.name) for k, of in self.args.items()}
        if limit is not OWN:
            kw["limit"] = getattr(out, limit.name) if isinstance(limit, Of) else limit
        return self.build(report, **kw)


def _caches(report: dict) -> list:
    return cache_section(report["compile_times"])


_PLACE = {"where": WHERE, "text": TEXT}

#: the report, most important first
SECTIONS: tuple[Row, ...] = (
    Row(title_heading, terminal=HIDDEN),
    Row(head_section),  # counts, backend override (fxlens.report.overview)
    Row(run_facts, {"ps": SHORTENER}, terminal=HIDDEN),  # the terminal's report follows the run
    Row(head_findings, {"text": TEXT}),  # rank groups or divergence, headlines
    Row(distributed_sections),  # collectives (a hang risk), parity, runtime, execution order
    Row(break_section, _PLACE, terminal=LIMIT, markdown=MAX_ROWS),  # fxlens.report.breaksrecompiles
    Row(more_break_details, terminal=HIDDEN),
    Row(recompile_section, _PLACE),
    Row(failed_guard_blocks, {"text": TEXT}, terminal=HIDDEN),
    Row(limit_hit_section, {"where": WHERE}),
    Row(fix_lines_section, markdown=HIDDEN),  # fxlens fix's results: its lines, its blocks
    Row(fix_blocks, {"ps": SHORTENER}, terminal=HIDDEN),
    Row(failure_section, _PLACE),  # folded across ranks (fxlens.report.failures)
    Row(special_sections),  # export issues, DDP splits, compiled autograd, AOTInductor, unknown kinds
    Row(graph_section, {**_PLACE, "artifact": ARTIFACT}, terminal=LIMIT, markdown=None),
    Row(guard_blocks, {"text": TEXT}, terminal=HIDDEN),  # the terminal: fxlens report --guards
    Row(compile_time_section, markdown=None),  # the slowest compiles, where cold start goes
    Row(_caches),  # what the caches did (fxlens.report.coldstart)
    Row(block_section, markdown=None),  # repeated blocks, regional compilation (report.blocks)
    Row(line_time_section, {"path": FILE, "text": TEXT}),  # Dynamo's seconds by source line
    Row(pass_section, markdown=15),  # the backend's seconds by pass (fxlens.report.passes)
    Row(compile_fix_section),  # re-traces per shape, functions to skip
    Row(kernel_compile_section, markdown=25),  # inductor seconds by kernel (Triton)
    Row(restart_section, {"text": TEXT}, markdown=MAX_ROWS),  # restarts, their reasons whole
    Row(specialization_section, {"path": PATH}, markdown=MAX_ROWS),
    Row(stack_trie_section, {"shorten": TEXT}, markdown=400),
    Row(output_code_section, {"text": TEXT, "artifact": ARTIFACT}, markdown=MAX_ROWS),
    Row(backend_blocks, terminal=LIMIT),  # fxlens's own kernels and fallbacks
    Row(note_blocks, {"text": TEXT}),
    Row(doctor_blocks, {"ps": SHORTENER}, terminal=HIDDEN),  # doctor's memory by cause among them
    Row(nothing_compiled, markdown=HIDDEN),
    Row(environment_section, {"env": ENV}, terminal=HIDDEN),
)


def section_blocks(report: dict, out: Output, column: str) -> list:
    """Every section COLUMN ("terminal" or "markdown") shows, in the table's order, as blocks."""
    blocks: list = []
    for row in SECTIONS:
        if (limit := getattr(row, column)) is not HIDDEN:
            blocks += row.blocks(report, out, limit)
    return blocks
