"""`fxlens report --format markdown|html`: the report as something to paste into a bug.

Built as document blocks (fxlens.report.document), so both formats hold the same content and every
string from the trace is escaped by the renderer. File paths are relative to the script's folder,
the home folder is `~`; long graphs and guard lists are collapsible sections.
"""

from __future__ import annotations

from pathlib import Path

from fxlens.report.contents import Output, section_blocks
from fxlens.report.document import to_html, to_markdown
from fxlens.report.markup import PathShortener
from fxlens.trace.userfiles import is_user_file
from fxlens.trace.userframes import shown_path


def report_blocks(report: dict, session=None, env: dict | None = None) -> list:
    """The report as document blocks: the sections of the report's table that Markdown and HTML
    show (fxlens.report.contents), with their limits.

    Args:
        report: the dict of `build_report`.
        session: the Session it was built from; when given, each graph's code is included.
        env: environment() of the run; None: computed now (imports torch to name the device).
    """
    ps = PathShortener((report.get("source") or {}).get("script"))

    def where(file: str, line) -> str:
        return f"{ps.path(file)}:{line}" if file else "?"

    def any_file(file: str) -> str:  # the user's files as the rest of the document writes them
        return ps.path(file) if is_user_file(file) else shown_path(file)

    out = Output(
        limit=None,
        where=where,
        path=ps.path,
        file=any_file,
        text=ps.text,
        artifact=session.artifact if session else None,
        shortener=ps,
        env=env,
    )
    return section_blocks(report, out, "markdown")


def render_markdown(report: dict, session=None, env: dict | None = None) -> str:
    """The report as GitHub-flavoured Markdown, ready to paste into an issue."""
    return to_markdown(report_blocks(report, session, env))


def render_html(report: dict, session=None, env: dict | None = None) -> str:
    """The report as one self-contained HTML page (no script, no network)."""
    name = Path((report.get("source") or {}).get("script") or "trace").name
    return to_html(report_blocks(report, session, env), f"fxlens report: {name}")
