"""The user's source lines as they were when the run ended, kept in the session (`sources.json`).

A report read later used to re-read each line from disk: after an edit it printed the new line
beside the old reason. `fxlens run` now stores, when the run ends, the lines the trace points at
(graphs, breaks and their call paths, recompiles, limit hits; user files only) with each file's
size, mtime and sha256; `SourceSnapshot.line` serves them back, and `SourceSnapshot.changed` says
whether the file on disk differs now.

Hook for other readers: `Session.sources` (a SourceSnapshot, empty for a bare trace), and
`current()` / `lookup(path, line)`: the snapshot of the session whose logs are being parsed
(`Session.iter_ranks` sets it), so a parser's `source_line(path, line, fallback)` can ask
`lookup(path, line)` first and fall back to the disk when it returns None.

A session may be hostile: sources.json is only read when it is a regular file of sane size, and
every entry is type-checked; anything odd reads as "not captured" (the disk is then used).
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from fxlens.trace.userfiles import is_user_file

SOURCES_FILE = "sources.json"
SOURCES_VERSION = 1
MAX_FILES = 500  # user files kept per session (a trace names far fewer)
MAX_FILE_BYTES = 16 << 20  # a larger "source file" is not read (a trace can name /dev/zero)
MAX_LINE_CHARS = 1000
MAX_SNAPSHOT_BYTES = 64 << 20  # sources.json larger than this is not read back

# the RankModel lists whose items have `file` and `line` (and graph breaks: a `call_path` of frames)
_LOCATED = ("graphs", "graph_breaks", "recompiles", "limit_hits", "metrics", "failures")


def referenced_lines(session) -> dict[str, set[int]]:
    """{file: {line, ...}} of every user frame the session's trace points at."""
    refs: dict[str, set[int]] = {}

    def add(path, line) -> None:
        if isinstance(path, str) and isinstance(line, int) and line > 0 and is_user_file(path):
            refs.setdefault(path, set()).add(line)

    for rank in session.ranks:
        for attr in _LOCATED:
            for item in getattr(rank, attr, None) or ():
                add(getattr(item, "file", None), getattr(item, "line", None))
                # a failed compile's user line (CompileMetrics), which the report shows beside it
                add(getattr(item, "fail_user_file", None), getattr(item, "fail_user_line", None))
                for frame in getattr(item, "call_path", None) or ():
                    add(frame.file, frame.line)
    return refs


def _digest(path: str) -> tuple[os.stat_result, str] | None:
    """(stat, sha256) of a regular file of sane size; None for anything else."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FILE_BYTES:
            return None
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except (OSError, ValueError):
        return None
    return st, hashlib.sha256(data).hexdigest()


def _read_lines(path: str, wanted: set[int]) -> dict[str, str]:
    out = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for n, text in enumerate(f, 1):
                if n in wanted:
                    out[str(n)] = text.rstrip("\r\n")[:MAX_LINE_CHARS]
                if n >= max(wanted):
                    break
    except (OSError, ValueError):
        return {}
    return out


def capture_sources(session) -> Path | None:
    """Write `sources.json` into a session: the lines its trace points at, as they are now.

    Returns the file, or None when there is nothing to keep or it could not be written (a full disk
    loses only this: the report then reads lines from disk, as before).
    """
    if session.kind != "session":
        return None
    files = {}
    for path, lines in sorted(referenced_lines(session).items())[:MAX_FILES]:
        got = _digest(path)
        if got is None:
            continue
        st, sha = got
        files[path] = {
            "size": st.st_size,
            "mtime_ns": st.st_mtime_ns,
            "sha256": sha,
            "lines": _read_lines(path, lines),
        }
    if not files:
        return None
    dest = Path(session.path) / SOURCES_FILE
    tmp = dest.with_name(SOURCES_FILE + ".tmp")
    try:
        tmp.write_text(json.dumps({"version": SOURCES_VERSION, "files": files}, indent=1))
        os.replace(tmp, dest)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        return None
    # the model read these lines from disk a moment ago; they are the same, so nothing to redo
    session.__dict__.pop("sources", None)
    return dest


@dataclass
class SourceSnapshot:
    """The source lines kept in one session; empty when none were (a bare trace, an older session)."""

    files: dict[str, dict] = field(default_factory=dict)
    _changed: dict[str, bool] = field(default_factory=dict, repr=False)

    @classmethod
    def load(cls, session_dir: str | os.PathLike) -> SourceSnapshot:
        """The snapshot of SESSION_DIR; empty (never an error) when missing, odd or corrupt."""
        path = Path(session_dir) / SOURCES_FILE
        try:
            st = path.stat()
            if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_SNAPSHOT_BYTES:
                return cls()
            data = json.loads(path.read_text(errors="replace"))
        except (OSError, ValueError, RecursionError):
            return cls()
        files = data.get("files") if isinstance(data, dict) else None
        if not isinstance(files, dict):
            return cls()
        good = {}
        for name, entry in files.items():
            if not (isinstance(entry, dict) and isinstance(entry.get("lines"), dict)):
                continue
            lines = {k: v for k, v in entry["lines"].items() if isinstance(k, str) and isinstance(v, str)}
            good[name] = {**entry, "lines": lines}
        return cls(good)

    def __bool__(self) -> bool:
        return bool(self.files)

    def line(self, path: str, line: int) -> str | None:
        """The stripped source line as it was when the run ended; None when it was not captured."""
        entry = self.files.get(path)
        if entry is None or not line:
            return None
        text = entry["lines"].get(str(line))
        return None if text is None else text.strip()

    def changed(self, path: str) -> bool | None:
        """Whether PATH on disk differs from the captured one (True also when it is gone); None
        when PATH was not captured. Size and mtime first; the hash only when they differ."""
        entry = self.files.get(path)
        if entry is None:
            return None
        if path not in self._changed:
            try:
                st = os.stat(path)
                same_stat = st.st_size == entry.get("size") and st.st_mtime_ns == entry.get("mtime_ns")
            except (OSError, ValueError):
                same_stat = False
            if same_stat:
                self._changed[path] = False
            else:
                got = _digest(path)
                self._changed[path] = got is None or got[1] != entry.get("sha256")
        return self._changed[path]

    def changed_files(self) -> list[str]:
        """The captured files that differ on disk now, in name order."""
        return [p for p in sorted(self.files) if self.changed(p)]


_CURRENT: contextvars.ContextVar[SourceSnapshot | None] = contextvars.ContextVar(
    "fxlens_sources", default=None
)


@contextlib.contextmanager
def using(snapshot: SourceSnapshot | None) -> Iterator[None]:
    """Make SNAPSHOT the one `lookup` answers from while a session's logs are parsed."""
    token = _CURRENT.set(snapshot if snapshot else None)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def current() -> SourceSnapshot | None:
    return _CURRENT.get()


def lookup(path: str, line: int) -> str | None:
    """The captured line of PATH:LINE in the session being parsed; None: not captured (read disk)."""
    snap = _CURRENT.get()
    return snap.line(path, line) if snap is not None else None
