"""`fxlens diff [--json FILE] [--format text|markdown|html] [--out FILE] A B`.

A and B are sessions, TORCH_TRACE directories or logs, or reports saved with `fxlens report --json`
(a baseline kept for CI). Exit status: 0 when B is no worse than A, 1 when B is worse on any gated
count (fxlens.diff.compare.GATED) or a side's script failed or compiled nothing (unless
--allow-failed), 2 on bad input (one line).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from fxlens.diff.compare import compare
from fxlens.diff.render import diff_blocks, render_text
from fxlens.diff.validate import check_report
from fxlens.errors import FxlensError
from fxlens.report.build import build_report
from fxlens.report.outputs import check_writable, write_json, write_output
from fxlens.trace.session import Session


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "a", metavar="A", help="the baseline: a session, TORCH_TRACE dir or log, or a report .json"
    )
    parser.add_argument("b", metavar="B", help="the one to judge, same kinds as A")
    parser.add_argument("--json", metavar="FILE", help="also write the diff as JSON to FILE ('-' for stdout)")
    parser.add_argument(
        "--format", choices=("text", "markdown", "html"), default="text", help="output format"
    )
    parser.add_argument("--out", metavar="FILE", help="write the formatted diff to FILE instead of stdout")
    parser.add_argument("--all", action="store_true", help="also list what is the same in both")
    parser.add_argument(
        "--allow-failed",
        action="store_true",
        help="compare the counts even when a side's script failed (non-zero exit, interrupted) or "
        "compiled nothing; without it such a diff says so first and exits 1",
    )


def load_report(path: str) -> dict:
    """The report of PATH: built from a session or trace, or read from a `fxlens report --json` file."""
    p = Path(path)
    if p.is_file() and p.suffix == ".json":
        try:
            data = json.loads(p.read_text())
        except (OSError, ValueError) as e:
            raise FxlensError(f"{p}: not a readable report JSON ({e})") from None
        except RecursionError:  # [[[[...]]]] thousands deep: json gives up; so do we, in one line
            raise FxlensError(f"{p}: not a readable report JSON (nested too deeply)") from None
        if not isinstance(data, dict) or "graphs" not in data or "graph_breaks" not in data:
            raise FxlensError(f"{p}: a JSON file, but not an fxlens report (no graphs / graph_breaks)")
        return check_report(data, str(p))
    return build_report(Session.open(p))


def diff_paths(a: str, b: str, allow_failed: bool = False) -> dict:
    """The diff dict of two paths (see `load_report`)."""
    return compare(load_report(a), load_report(b), allow_failed)


def main(args: argparse.Namespace) -> int:
    check_writable(args.json)
    check_writable(args.out, "--out")
    diff = diff_paths(args.a, args.b, args.allow_failed)
    if args.json:
        write_json(diff, args.json)
    if args.format == "text":
        text = render_text(diff, show_same=args.all)
    else:
        from fxlens.report.document import to_html, to_markdown

        blocks = diff_blocks(diff)
        text = to_markdown(blocks) if args.format == "markdown" else to_html(blocks, "fxlens diff")
    write_output(text, args.out, quiet=args.json == "-")
    if args.json == "-":
        sys.stdout.flush()
    return 1 if diff["worse"] else 0
