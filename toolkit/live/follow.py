"""Following a session or trace that a job is still writing (`fxlens tui --follow`).

`Follow.poll()` reads what the job appended (fxlens.live.tail, into fxlens.live.state) and says
whether the views should re-read the trace: new bytes arrived and the last full read is old
enough (at least `min_reload_s`, and three times what the last full read took, so a big trace is
not re-read back to back), or the run just ended. No Textual here: the TUI calls it from a worker.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from fxlens.live.state import LiveState
from fxlens.live.status import status_line
from fxlens.live.tail import TraceTail
from fxlens.report.exits import how_it_ended
from fxlens.trace.processes import alive
from fxlens.trace.session import LOCK_FILE, SESSION_FILE, TRACE_DIR


def run_in_progress(path: str | os.PathLike) -> bool:
    """Whether PATH is an `fxlens run` session still being written: no exit code yet in
    session.json, and the fxlens process that holds its lock is alive (a run killed by SIGKILL
    left no exit code, but its process is gone)."""
    p = Path(path)
    try:
        info = json.loads((p / SESSION_FILE).read_text())
    except (OSError, ValueError):
        return False
    if not isinstance(info, dict) or info.get("exit_code") is not None or "finished" in info:
        return False
    try:
        pid = int((p / LOCK_FILE).read_text().strip() or 0)
    except (OSError, ValueError):
        return False
    return pid > 0 and alive(pid)


def run_ending(path: str | os.PathLike) -> tuple[str, bool]:
    """(how the run of session PATH ended, in the words `fxlens run` prints; whether it failed).
    A run whose fxlens was killed (SIGKILL: no handler ran) recorded no end at all."""
    try:
        info = json.loads((Path(path) / SESSION_FILE).read_text())
    except (OSError, ValueError):
        info = None
    if not isinstance(info, dict):
        return "its session.json cannot be read", True
    code = info.get("exit_code")
    if info.get("interrupted"):
        return "interrupted (Ctrl-C or SIGTERM)", True
    if not isinstance(code, int) or isinstance(code, bool):
        return "fxlens stopped without recording how (killed?)", True
    timeout = info.get("timed_out") if isinstance(info.get("timed_out"), (int, float)) else None
    return f"the script {how_it_ended(code, timeout)}", code != 0


def trace_of(path: str | os.PathLike) -> Path:
    """The TORCH_TRACE directory (or log) of a session or trace PATH."""
    p = Path(path)
    return p / TRACE_DIR if (p / SESSION_FILE).is_file() else p


class Follow:
    """A job's trace followed for a view: live state, and when to re-read it whole."""

    def __init__(self, path: str | os.PathLike, min_reload_s: float = 2.0, clock=time.monotonic):
        self.path = Path(path)
        self.is_session = (self.path / SESSION_FILE).is_file()
        self.tail = TraceTail(trace_of(self.path))
        self.state = LiveState()
        self.min_reload_s = min_reload_s
        self.clock = clock
        self.running = run_in_progress(self.path) if self.is_session else True
        self._loaded_at = clock()
        self._load_s = 0.0
        self._read_at_load = 0
        self.ended = False  # the session's run ended (set once, by the poll that saw it)
        self.ending: str | None = None  # how it ended, in words, once it did (`run_ending`)
        self.failed = False  # it ended other than with status 0
        if self.is_session and not self.running:  # it had ended before we looked
            self.ending, self.failed = run_ending(self.path)

    def poll(self) -> bool:
        """Read what was appended; whether the views should re-read the trace now."""
        self.state.update(self.tail.poll())
        if self.is_session and self.running and not run_in_progress(self.path):
            self.running = False
            self.ended = True
            self.ending, self.failed = run_ending(self.path)
            self.state.update(self.tail.poll())  # what it wrote last
            return True
        grew = self.tail.bytes_read > self._read_at_load
        wait = max(self.min_reload_s, 3 * self._load_s)
        return grew and self.clock() - self._loaded_at >= wait

    def loaded(self, seconds: float, bytes_read: int | None = None) -> None:
        """A full read of the trace finished, taking SECONDS, covering what was read when it began."""
        self._loaded_at = self.clock()
        self._load_s = seconds
        self._read_at_load = self.tail.bytes_read if bytes_read is None else bytes_read

    def status(self, width: int = 0) -> str:
        """The status line, prefixed with whether the job still runs."""
        text = status_line(self.state, width=0).removeprefix("fxlens | ")
        if self.is_session and not self.running:
            head = f"run ended: {self.ending}" if self.ending else "run ended"
        else:
            head = "following"
        line = f"{head} | {text}"
        return line if not width or len(line) <= width else line[: max(0, width - 3)] + "..."
