"""tlparse's views as document blocks for `fxlens report --format markdown|html`: the per-compile time
breakdown with caches, failures (folded across ranks) and restarts with torch's whole text, shape
specialisations with the guards they added and their stacks, the stack trie, and inductor's output
code with its provenance (kernel <- post-grad nodes <- pre-grad nodes <- the user's line).

The same data as the text report's sections (fxlens.report.compiles, failures, specializations,
stacktrie, outputcode); every string goes through the renderer's escaping (fxlens.report.document).
"""

from __future__ import annotations

from fxlens.report.blocks import block_section
from fxlens.report.coldstart import cache_section
from fxlens.report.document import Heading, Para
from fxlens.report.markup import PathShortener
from fxlens.report.overview import compile_time_section
from fxlens.report.ranks import rank_ranges
from fxlens.report.stacktrie import trie_tree

MAX_TEXT_LINES = 200


def _ranked(report: dict) -> bool:
    return len(report.get("ranks") or []) > 1


def _ranks(ranks: list) -> str:
    return rank_ranges(ranks, limit=6)


def _headers(ranked: bool, *names: str) -> list[str]:
    """NAMES, after a "ranks" column when the report has several ranks."""
    return (["ranks"] if ranked else []) + list(names)


def _whole(text: str) -> str:
    lines = (text or "").rstrip("\n").split("\n")
    if len(lines) <= MAX_TEXT_LINES:
        return "\n".join(lines)
    return "\n".join(lines[:MAX_TEXT_LINES] + [f"... {len(lines) - MAX_TEXT_LINES} more lines (see --json)"])


def _secs(v) -> str:
    return "-" if v is None else f"{v:.2f}"


def compile_time_blocks(report: dict) -> list:
    """The compile-time section (fxlens.report.overview), the caches, the repeated blocks."""
    ct = report.get("compile_times") or {}
    return [*compile_time_section(report, None), *cache_section(ct), *block_section(report, None)]


def stack_trie_blocks(report: dict, ps: PathShortener) -> list:
    """The user frames that entered each compile, as an indented tree with each compile's outcome."""
    tree = trie_tree(report, limit=400, shorten=ps.text)
    if tree is None:
        return []
    return [
        Heading(3, "Stack trie"),
        Para("The user frames that entered each compile; each compile's outcome after its id (none: ok)."),
        tree,
    ]
