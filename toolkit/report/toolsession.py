"""`fxlens report` on a bisect or minify session: its verdict and its runs, not "empty trace".

Such a session holds no trace of its own: its result is an event in events.jsonl (`bisect`,
`minify`) and each child run is a session of its own under runs/ (bisect) or children/ (minify).
The report shows the verdict as the command printed it, then one row per run with how it ended and
where its trace is. `--json` keeps the report's contract keys (empty lists: this session compiled
nothing itself) and adds `command`, `verdict` (the event as recorded, null when the command did
not finish) and `runs`.

Events come from a file anyone may have edited: a verdict missing the fields the renderer needs
falls back to its summary line (or to saying it is unreadable), never to a traceback.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
from pathlib import Path

from fxlens.report.bisect_result import BisectResult
from fxlens.report.minify_result import MinifyResult
from fxlens.report.texttable import tabulate
from fxlens.trace.reader import find_logs
from fxlens.trace.sanitize import clean, for_terminal
from fxlens.trace.session import SESSION_FILE, TRACE_DIR, Session

TOOLS = ("bisect", "minify")
# each tool's result type: what its event holds, and how it renders (lines, blocks)
RESULTS = {"bisect": BisectResult, "minify": MinifyResult}
# where each command keeps the sessions of its child runs
RUN_DIRS = {"bisect": "runs", "minify": "children"}
MAX_RUN_ROWS = 50  # runs listed in text (all of them in --json)


def tool_of(session: Session) -> str | None:
    """ "bisect" or "minify" when SESSION is one of theirs (and has no trace of its own), else None."""
    if session.kind != "session" or session.logs:
        return None
    command = session.info.get("command")
    if command in TOOLS:
        return command
    kinds = {e.get("event") for e in session.events}
    return next((t for t in TOOLS if t in kinds), None)


def verdict_of(session: Session, tool: str) -> dict | None:
    """The last verdict event of TOOL in the session; None when it never finished."""
    found = [e for e in session.events if e.get("event") == tool]
    return found[-1] if found else None


def _read_info(path: Path) -> dict:
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode) or st.st_size > 1 << 20:
            return {}
        info = json.loads(path.read_text(errors="replace"))
    except (OSError, ValueError, RecursionError):
        return {}
    return info if isinstance(info, dict) else {}


def child_runs(session: Session, tool: str) -> list[dict]:
    """One `{name, path, exit_code, seconds, interrupted, logs}` per child run, in run order."""
    d = session.path / RUN_DIRS[tool]
    try:
        entries = sorted(p for p in d.iterdir() if p.is_dir()) if d.is_dir() else []
    except OSError:
        return []
    runs = []
    for run in entries:
        info = _read_info(run / SESSION_FILE)
        trace = run / TRACE_DIR
        try:
            logs = len(find_logs(trace)) if trace.is_dir() else 0
        except OSError:
            logs = 0
        runs.append(
            {
                "name": f"{RUN_DIRS[tool]}/{run.name}",
                "path": str(run),
                "exit_code": info.get("exit_code"),
                "seconds": info.get("seconds"),
                "interrupted": bool(info.get("interrupted")),
                "logs": logs,
            }
        )
    return runs


def _ended(run: dict) -> str:
    code = run["exit_code"]
    if run["interrupted"]:
        return "interrupted"
    if code is None:
        return "did not finish"
    if isinstance(code, int) and code < 0:
        return f"killed by signal {-code}"
    return f"exit {code}"


def result_of(tool: str, verdict: dict) -> BisectResult | MinifyResult:
    """The tool's typed result, read back from its recorded event."""
    return RESULTS[tool].from_json(verdict)


def _verdict_lines(tool: str, verdict: dict) -> list[str]:
    """The verdict as the tool renders it; its summary line when the event lacks fields."""
    if not isinstance(verdict.get("summary"), str) or not verdict["summary"]:  # every verdict has one
        return [f"verdict: recorded, but unreadable ({tool} event without a summary)"]
    try:
        return result_of(tool, verdict).lines()
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):  # a field of another shape
        return [f"verdict: {verdict['summary']}"]


def build_tool_report(session: Session, tool: str, base: dict) -> dict:
    """BASE (the report of the session's own, empty, trace) with the verdict and runs added."""
    return {**base, "command": tool, "verdict": verdict_of(session, tool), "runs": child_runs(session, tool)}


def render_tool_text(report: dict) -> str:
    """The text report of a bisect or minify session."""
    report = clean(report)
    tool, verdict, runs = report["command"], report["verdict"], report["runs"]
    script = (report.get("source") or {}).get("script") or "?"
    out = [f"fxlens report: a {tool} session of {script}, {len(runs)} run(s)"]
    if cmd := tool_command(report):
        out.append(f"command: {cmd}")
    out.append("")
    if verdict is None:
        out.append(f"verdict: none recorded: the {tool} did not finish (interrupted or killed)")
    else:
        out += _verdict_lines(tool, verdict)
    if runs:
        out += ["", "Runs:"]
        rows = [
            [r["name"], _ended(r), "-" if r["seconds"] is None else f"{r['seconds']:.1f}", r["logs"] or "-"]
            for r in runs[:MAX_RUN_ROWS]
        ]
        out.append(tabulate(rows, headers=["run", "ended", "seconds", "trace logs"], tablefmt="simple"))
        if len(runs) > MAX_RUN_ROWS:
            out.append(f"  ... {len(runs) - MAX_RUN_ROWS} more run(s) (see --json)")
        traced = next((r for r in runs if r["logs"]), None)
        if traced:
            out.append(f"  each run is a session: fxlens report {shlex.quote(_rel(traced['path']))}")
    out += [f"note: {s}" for s in report.get("skipped") or []]
    return for_terminal("\n".join(out).rstrip() + "\n")


def tool_command(report: dict) -> str | None:
    """The bisect / minify command as it was typed (its verdict's `invocation`, else session.json)."""
    from fxlens.report.markup import command_line

    inv = (report.get("verdict") or {}).get("invocation") if isinstance(report.get("verdict"), dict) else None
    src = report.get("source") or {}
    if not isinstance(inv, dict):
        inv = src if src.get("script") else None
    try:
        return command_line(report["command"], inv) if inv else None
    except (TypeError, AttributeError, ValueError):  # an edited session.json: no command, no traceback
        return None


def _rel(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def render_tool_blocks(report: dict) -> list:
    """--format markdown/html: the blocks `fxlens bisect/minify --format` print for their verdict."""
    from fxlens.report.document import Bullets, Code, Heading, Para

    tool, verdict = report["command"], report["verdict"]
    script = (report.get("source") or {}).get("script")
    runs = [[Code(r["name"]), f" {_ended(r)}"] for r in report["runs"]]
    if verdict is None:
        out = [Heading(2, f"fxlens {tool}"), Para(f"No verdict recorded: the {tool} did not finish.")]
    else:
        src = report.get("source") or {}
        invocation = src if src.get("script") else None  # for a result recorded without its own
        try:
            out = result_of(tool, verdict).blocks(script, invocation=invocation)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError):
            out = [Heading(2, f"fxlens {tool}"), Para(f"verdict: {verdict.get('summary') or 'unreadable'}")]
    if runs:
        out += [Heading(3, f"Runs ({len(runs)})"), Bullets(runs)]
    return out


def report_main(session: Session, tool: str, args) -> int:
    """`fxlens report` on a bisect or minify session (called by fxlens.report.command.main)."""
    from fxlens.report.build import build_report
    from fxlens.report.outputs import write_json, write_output

    report = build_tool_report(session, tool, build_report(session, with_guards=False))
    if args.json:
        write_json(report, args.json)
    if args.format == "text":
        text = render_tool_text(report)
    else:
        from fxlens.report.verdicts import render

        text = render(render_tool_blocks(report), args.format, f"fxlens {tool}")
    write_output(text, args.out, quiet=args.json == "-")
    return 0
