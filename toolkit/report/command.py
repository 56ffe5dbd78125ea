"""`fxlens report [--format text|markdown|html] [--out FILE] [--json FILE] PATH`: report on a session,
a TORCH_TRACE directory or one log; markdown and html are for pasting into a bug."""

from __future__ import annotations

import argparse
import sys

from fxlens.report.build import build_report
from fxlens.report.outputs import check_writable, write_json, write_output
from fxlens.report.text import render_text
from fxlens.trace.sanitize import clean
from fxlens.trace.session import Session


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path", metavar="PATH", help="a session directory, a TORCH_TRACE directory, or a log file"
    )
    parser.add_argument(
        "--json", metavar="FILE", help="also write the report as JSON to FILE ('-' for stdout)"
    )
    parser.add_argument(
        "--no-guards", action="store_true", help="leave guard lines out of the JSON (smaller, faster)"
    )
    parser.add_argument("--guards", action="store_true", help="also print every compile id's guards as text")
    parser.add_argument(
        "--format",
        choices=("text", "markdown", "html"),
        default="text",
        help="text (default); markdown (GitHub issue, collapsible graphs and guards); html (one "
        "self-contained page)",
    )
    parser.add_argument("--out", metavar="FILE", help="write the formatted report to FILE instead of stdout")
    parser.add_argument(
        "--perfetto",
        metavar="FILE",
        help="also write torch's Chromium trace events of every rank as one trace (pid = rank), for "
        "ui.perfetto.dev or chrome://tracing",
    )


def render_guards(report: dict) -> str:
    """Every compile id's guards, one block each (torch's guard tree lines as logged)."""
    out = []
    for g in clean(report.get("guards", [])):
        rank = f" rank {g['rank']}" if g["rank"] is not None else ""
        out.append(f"\nGuards of {g['compile_id']}{rank} ({len(g['guards'])} lines):")
        out.extend(f"  {line}" for line in g["guards"])
    return "\n".join(out) + "\n"


def main(args: argparse.Namespace) -> int:
    check_writable(args.json)
    check_writable(getattr(args, "perfetto", None), "--perfetto")
    check_writable(args.out, "--out")
    session = Session.open(args.path)
    if session.kind == "session" and not session.logs:  # maybe bisect's / minify's (no trace of their own)
        from fxlens.report.toolsession import report_main, tool_of

        if tool := tool_of(session):  # their verdict and runs
            return report_main(session, tool, args)
    session.check_not_empty()
    if getattr(args, "perfetto", None):
        from fxlens.report.perfetto import write_perfetto

        n = write_perfetto(session, args.perfetto)
        print(f"wrote {args.perfetto} ({n} events, {len(session.logs)} rank(s))", file=sys.stderr)
    report = build_report(session, with_guards=not args.no_guards)
    if args.format == "text":  # only Markdown and HTML read the session again (each graph's code)
        session.release()
    if args.json:
        write_json(report, args.json)
    if args.format == "text":
        text = render_text(report) + (render_guards(report) if args.guards else "")
    else:
        from fxlens.report.formats import render_html, render_markdown

        render = render_markdown if args.format == "markdown" else render_html
        text = render(report, session)
    write_output(text, args.out, quiet=args.json == "-")
    return 0
