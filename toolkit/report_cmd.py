"""`fxlens report PATH [--json FILE]`: report on a session, a TORCH_TRACE directory or one log."""

from __future__ import annotations

import argparse
import json
import sys

from fxlens.report import build_report, render_text
from fxlens.session import Session


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


def write_json(report: dict, dest: str) -> None:
    text = json.dumps(report, indent=1, default=str)
    if dest == "-":
        sys.stdout.write(text + "\n")
    else:
        with open(dest, "w") as f:
            f.write(text + "\n")


def main(args: argparse.Namespace) -> int:
    session = Session.open(args.path)
    report = build_report(session, with_guards=not args.no_guards)
    if args.json:
        write_json(report, args.json)
    if args.json != "-":
        sys.stdout.write(render_text(report))
    return 0
