"""The report as text: `render_text(report)`, the tables `fxlens run` and `fxlens report` print.

Every section is a row of the report's table of sections (fxlens.report.contents), which Markdown
and HTML are produced from too; the terminal shows the rows of its column, with its limits, and
`text_lines` renders their blocks.
"""

from __future__ import annotations

from fxlens.report.contents import Output, section_blocks
from fxlens.report.document import text_lines
from fxlens.trace.sanitize import clean, for_terminal


def render_text(report: dict, limit: int = 20) -> str:
    """The human report: tabulate tables, most important first.

    Every string from the trace is shown with its control characters escaped (before the tables
    are laid out, so columns still line up), and the whole text once more as a backstop.
    """
    report = clean({k: v for k, v in report.items() if k != "guards"})  # guards: render_guards
    out = text_lines(section_blocks(report, Output(limit=limit), "terminal"))
    return for_terminal("\n".join(out).rstrip() + "\n")
