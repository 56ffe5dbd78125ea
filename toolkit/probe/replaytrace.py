"""Keep the trace records of doctor's own replay out of the script's findings.

The compiled child writes torch's structured trace (TORCH_TRACE) for the whole process, and doctor's
re-timing runs in that process after the script has ended. Whatever it compiles (a guard that still
fails, a lazy backward) is recorded in the same log and, read as the script's, would turn into
findings the script never had. So the child marks the boundary just before the replay (`mark`: the
log it writes and its size then; torch's trace handler flushes every record), and the parent, once
the child has exited, moves everything after it into `<session>/doctor-replay/` (`split`): a
TORCH_TRACE directory of its own (`fxlens report` opens it), so the session's trace is the script's.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

# the replay's records, as a TORCH_TRACE directory of their own, inside the compiled run's session
REPLAY_DIR = "doctor-replay"


def mark() -> dict | None:
    """In the child, before the replay: where the script's trace ends (None: no structured trace).

    `{"log": path, "offset": bytes}` for the log this process writes, or `{"log": None, "dir",
    "pid", "existing"}` when it has written none yet (torch opens its log at the first record).
    """
    root = os.environ.get("TORCH_TRACE")
    if not root:
        return None
    try:
        from fxlens.backend.torch_compat import LOG_TRACE_HANDLER
    except (ImportError, AttributeError):
        return None
    stream = getattr(LOG_TRACE_HANDLER, "stream", None)
    if stream is None:
        existing = sorted(p.name for p in Path(root).glob("*.log")) if os.path.isdir(root) else []
        return {"log": None, "dir": root, "pid": os.getpid(), "existing": existing}
    try:
        stream.flush()
        # torch opens its log with os.fdopen: the stream's name is the descriptor, /proc names the file
        name = stream.name if isinstance(stream.name, str) else os.readlink(f"/proc/self/fd/{stream.name}")
        return {"log": os.path.abspath(name), "offset": os.path.getsize(name)}
    except (OSError, ValueError, TypeError):  # no /proc (macOS): the replay's records stay in the log
        return None


def _interned(head: bytes) -> bytes:
    """The string-table records of a log's head: the replay's records refer to their indices."""
    return b"".join(ln + b"\n" for ln in head.split(b"\n") if b'{"str": [' in ln[:120])


def _pid_of(path: Path) -> int | None:
    """The process id in a structured-trace log's first record (`V1205 00:58:17.72 14120 file:1] ...`)."""
    try:
        with open(path, "rb") as f:
            first = f.readline().split()
        return int(first[2]) if len(first) > 2 else None
    except (OSError, ValueError):
        return None


def split(session: Path, boundary: dict | None) -> dict:
    """In the parent, after the child exited: move the replay's records out of the session's trace.

    Returns `{"trace": dir or None, "bytes": moved}`; a boundary that no longer matches the log
    (truncated, missing) moves nothing.
    """
    if not boundary:
        return {"trace": None, "bytes": 0}
    out = Path(session) / REPLAY_DIR
    moved = 0
    if boundary.get("log"):
        log = Path(boundary["log"])
        offset = int(boundary.get("offset") or 0)
        try:
            size = log.stat().st_size
        except OSError:
            return {"trace": None, "bytes": 0}
        if size <= offset:
            return {"trace": None, "bytes": 0}
        with open(log, "rb") as f:
            head = f.read(offset)
            tail = f.read()
        out.mkdir(parents=True, exist_ok=True)
        (out / log.name).write_bytes(_interned(head) + tail)
        with open(log, "r+b") as f:
            f.truncate(offset)
        moved = len(tail)
    else:
        root = Path(boundary.get("dir") or "")
        existing = set(boundary.get("existing") or ())
        for log in sorted(root.glob("*.log")) if root.is_dir() else []:
            if log.name in existing or _pid_of(log) != boundary.get("pid"):
                continue
            out.mkdir(parents=True, exist_ok=True)
            moved += log.stat().st_size
            shutil.move(str(log), out / log.name)
    return {"trace": str(out) if moved else None, "bytes": moved}


def replay_compiles(trace_dir: str | None) -> list[str]:
    """Compile ids whose compiles ran during the replay (from its split-off trace; [] when none)."""
    if not trace_dir:
        return []
    import json
    import re

    ids = []
    pattern = re.compile(rb'"dynamo_start": \{')
    for log in sorted(Path(trace_dir).glob("*.log")):
        for line in log.read_bytes().split(b"\n"):
            if not pattern.search(line[:200]):
                continue
            try:
                rec = json.loads(line[line.index(b"{") :])
            except ValueError:
                continue
            fid, cid = rec.get("frame_id"), rec.get("frame_compile_id")
            if fid is not None:
                ids.append(f"{fid}/{cid}")
    return ids
