"""torch's timed events (`chromium_event` records: the B/E pairs of `dynamo_timed`) as a tree per
compile: each event's inclusive and self seconds and the compile stage it ran in.

Record kind this module owns: `chromium_event` (the reader skips these records; this is a second
pass over one log, read as bytes, done only by the report sections that need it). Pure Python.
"""

from __future__ import annotations

import json
import mmap
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

# a log larger than this is not read a second time for its timed events (the report says so)
MAX_BYTES = 512 << 20

# (event name or name prefix, stage): the innermost enclosing event that matches names the stage
_STAGES = (
    ("entire_backward_compile", "backward"),
    ("inductor_compile", "inductor"),
    ("fx_codegen_and_compile", "inductor"),
    ("compile_fx.", "inductor"),
    ("create_aot_dispatcher_function", "aot_autograd"),
    ("backend_compile", "backend"),
    ("entire_frame_compile", "dynamo"),
    ("dynamo", "dynamo"),
)


@dataclass(frozen=True)
class TimedEvent:
    """One timed event of one compile: its name, stage, depth, inclusive and self seconds."""

    name: str
    stage: str
    depth: int
    incl_s: float
    self_s: float


def _stage(names: list[str]) -> str:
    for name in reversed(names):  # innermost first
        for key, stage in _STAGES:
            if name == key or (key.endswith(".") and name.startswith(key)):
                return stage
    return "other"


# a chromium_event record's header line holds this within its first 300 bytes; TAB-prefixed payload
# lines follow it. Found by searches over the mapped file, not a Python loop per line.
_MARK = b'] {"chromium_event"'
_PAYLOAD = re.compile(rb"(?:\t[^\n]*(?:\n|\Z))*")


def chromium_events(path: str | Path):
    """Every chromium event torch logged in one log (its payload decoded, a dict), in log order;
    payloads that are not JSON are passed over. The one reader of these events."""
    with open(path, "rb") as f:
        try:
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # an empty file cannot be mapped
            return
    with data:
        pos = 0
        while (i := data.find(_MARK, pos)) >= 0:
            pos = i + 1
            if i - (data.rfind(b"\n", 0, i) + 1) > 300 - len(_MARK):
                continue  # past the line's first 300 bytes: not a header
            end = data.find(b"\n", i)
            body = _PAYLOAD.match(data, len(data) if end < 0 else end + 1)
            pos = max(pos, body.end())  # the payload's lines are this record's, never a header
            lines = body.group()  # "\tl1\n\tl2\n": each line less its TAB, as torch wrote the payload
            if (e := _decoded(lines[1:].replace(b"\n\t", b"\n"))) is not None:
                yield e


def _decoded(raw: bytes) -> dict | None:
    try:
        e = json.loads(raw)
    except ValueError:
        return None
    return e if isinstance(e, dict) else None


@lru_cache(maxsize=8)
def _read(path: str, size: int, mtime: float) -> dict[str, list[TimedEvent]]:
    out: dict[str, list[TimedEvent]] = {}
    stacks: dict[str, list[list]] = {}  # compile id -> open [name, start, seconds of children]
    for e in chromium_events(path):
        _event(e, stacks, out)
    return out


def _event(e: dict, stacks: dict, out: dict) -> None:
    if not isinstance(e.get("name"), str) or not isinstance(e.get("ts"), int | float):
        return
    cid = str((e.get("args") or {}).get("compile_id"))
    stack = stacks.setdefault(cid, [])
    if e.get("ph") == "B":
        stack.append([e["name"], e["ts"], 0.0])
    elif e.get("ph") == "E":
        names = [s[0] for s in stack]
        if e["name"] not in names:
            return
        while stack:  # an event left open inside this one (an exception) closes with it
            name, start, children = stack.pop()
            incl = (e["ts"] - start) * 1e-6
            if stack:
                stack[-1][2] += incl
            stage = _stage([*(s[0] for s in stack), name])
            out.setdefault(cid, []).append(
                TimedEvent(name, stage, len(stack), round(incl, 6), round(max(0.0, incl - children), 6))
            )
            if name == e["name"]:
                break


def timed_events(path: str | Path) -> dict[str, list[TimedEvent]]:
    """compile id ("0/0"; "None" where torch named none) -> its timed events, in the order they
    ended; {} for a log that cannot be read or is larger than MAX_BYTES."""
    try:
        st = os.stat(path)
    except OSError:
        return {}
    if st.st_size > MAX_BYTES:
        return {}
    try:
        return _read(str(path), st.st_size, st.st_mtime)
    except OSError:
        return {}


def seconds_by_name(events: list[TimedEvent], names) -> dict[str, float]:
    """{name: inclusive seconds summed} of the events named in `names` (and each compile_attempt_N)."""
    out: dict[str, float] = {}
    for ev in events:
        if ev.name in names or ev.name.startswith("compile_attempt_"):
            out[ev.name] = round(out.get(ev.name, 0.0) + ev.incl_s, 6)
    return out
