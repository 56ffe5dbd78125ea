"""A graph-break record (`dynamo_graph_break_reason`) read as a GraphBreak: torch's reason (its gb
type), explanation, hints and registry id, the user's innermost frame, the call path from the
compiled entry, and the library frame that broke when the user's line only called into a library."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from fxlens.trace.records import Frame, GraphBreak
from fxlens.trace.userfiles import is_user_file, library_path
from fxlens.trace.userframes import innermost_user_frame, parse_traceback, source_line, user_function

if TYPE_CHECKING:
    from fxlens.trace.reader import Record

_BREAK_AT = re.compile(r"^Graph break in user code at (?P<file>.+):(?P<line>\d+)$", re.M)
_GB_ID = re.compile(r"/gb/(gb\d+)\.html", re.I)
_SKIPPED = "Skipping the function and falling back to eager"


def _head_fields(text: str) -> tuple[str, str, list[str], str]:
    """(reason, explanation, hints, url) from the record's head (torch repeats the reason inside the
    traceback of its exception, so hints are read from the head only)."""
    head = re.split(
        r"^(?:User code traceback:|Stack variable source attribution:)", text, maxsplit=1, flags=re.M
    )[0]
    lines = head.split("\n")
    reason, explanation, hints, url = "", "", [], ""
    for i, line in enumerate(lines):
        s = line.strip()
        if s.startswith("Explanation:") and not explanation:
            explanation = s[len("Explanation:") :].strip()
            # torch's gb type is the last non-blank line before the explanation
            reason = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        elif s.startswith("Hint:") and s[len("Hint:") :].strip() not in hints:
            hints.append(s[len("Hint:") :].strip())
        elif "please visit:" in s:
            url = s.split("please visit:", 1)[1].strip()
    if reason.startswith("Graph Break Reason:"):
        reason = reason[len("Graph Break Reason:") :].strip()
    if not reason:
        m = re.search(r"^Graph Break Reason: (.+)$", text, re.M)
        reason = m.group(1).strip() if m else "graph break"
    return reason, explanation, hints, url


def _frames(text: str) -> list[Frame]:
    tb_text = text.split("User code traceback:", 1)[1] if "User code traceback:" in text else ""
    return parse_traceback(tb_text.split("Traceback (most recent call last)", 1)[0])


def graph_break(rec: Record, cid: str, where_: tuple, entry: list[Frame]) -> GraphBreak:
    """One graph-break record, placed at the user's innermost frame (the call site from the entry
    stack when torch broke inside a library with no user frame on its traceback)."""
    text = rec.payload()
    reason, explanation, hints, url = _head_fields(text)
    fn_entry, _, _, co = where_
    frames = _frames(text)
    inner = innermost_user_frame(frames)
    at = _BREAK_AT.search(text)
    if inner is None and at and is_user_file(at["file"]):
        inner = Frame(at["file"], int(at["line"]), fn_entry, "")
    if inner is None:
        inner = innermost_user_frame(entry) or Frame("", 0, fn_entry, "")
    # the call path: user frames from the compiled entry to the break
    start = max(
        (i for i, f in enumerate(frames) if user_function(f.function) == user_function(co)), default=0
    )
    path = tuple(
        Frame(f.file, f.line, user_function(f.function), f.code)
        for f in frames[start:]
        if is_user_file(f.file)
    ) or tuple(Frame(f.file, f.line, user_function(f.function), f.code) for f in entry[-1:])
    # the frame that broke, when it is a library's: the user's line only called it
    last = frames[-1] if frames else (Frame(at["file"], int(at["line"]), "", "") if at else None)
    library = None
    if last is not None and not is_user_file(last.file) and last != inner:
        library = Frame(library_path(last.file), last.line, last.function, last.code or "")
    gb = _GB_ID.search(url)
    return GraphBreak(
        cid,
        rec.rank,
        reason,
        inner.file,
        inner.line,
        user_function(inner.function),
        explanation,
        tuple(hints),
        url,
        source_line(inner.file, inner.line, inner.code),
        path,
        library,
        gb.group(1).upper() if gb else "",
        is_eager_frame(text),
    )


def is_eager_frame(text: str) -> bool:
    """Whether a graph-break record's text says torch gave up on the frame (it then runs eagerly):
    one rule for the reader and the budgets' quick count (fxlens.budget.excess.quick_counts)."""
    return _SKIPPED in text.split("User code traceback:", 1)[0]


_RESUME_AT = re.compile(r"^torch_dynamo_resume_in_(?P<fn>\w+?)_at_(?P<line>\d+)$")


_AS_RESTART = "logged by this torch release as a restart of the frame's analysis (no graph-break record)"


def restart_breaks(metrics: list, logged: list) -> list[GraphBreak]:
    """Graph breaks of torch releases that logged none (2.3 and 2.4 logged a break only as a restart
    of the frame's analysis, `restart_reasons` in its compilation metrics): one break per restarted
    compile, its reason torch's own text, its line the one the next resume function of that function
    names (`torch_dynamo_resume_in_fn_at_9551`), else the frame's own line."""
    if logged:
        return []  # a release that logs breaks: its restarts are the breaks already listed
    order, out = list(metrics), []
    for i, m in enumerate(order):
        if not m.restart_reasons or m.fail_type:
            continue
        fn = user_function(m.co_name)
        line, file = m.line, m.file
        for later in order[i + 1 :]:
            r = _RESUME_AT.match(later.co_name or "")
            if r and user_function(later.co_name) == fn and later.code_file == m.code_file:
                line = int(r["line"])
                file = m.code_file or m.file
                break
        reason = " ".join(m.restart_reasons[-1].strip().strip("'\"").split())
        out.append(GraphBreak(m.compile_id, m.rank, reason, file, line, fn, explanation=_AS_RESTART))
    return out
