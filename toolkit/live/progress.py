"""Progress of fxlens's own long waits, one way for every command: reading many ranks' logs,
doctor's runs, bisect's runs, minify's queries.

    fxlens doctor: run 3/6 (compiled, round 2) · 41.2s · last step 12.9s

On a terminal the line is redrawn in place at the bottom of stderr, and lines a command prints
meanwhile (`echo`) go above it; it appears only once a wait has lasted `after_s` (a quick command
shows nothing). Off a terminal (CI logs, pipes, tests) it draws nothing. Only the CLI turns it on
(`enable()`), so a library caller, a test or the TUI (which owns the terminal) never gets it.
Each step's time is kept (`Progress.steps`), drawn or not.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from fxlens.trace.sanitize import SafeStream, for_terminal

T = TypeVar("T")
_CLEAR = "\r\x1b[K"
_enabled = False
AFTER_S = 0.5  # seconds of waiting before a progress line is first drawn
_shown: list[Progress] = []  # the progress whose line is on screen now (at most one)
TICK_S = 1.0  # while a step runs (`begin`), its line is redrawn this often: its clock moves
_lock = threading.RLock()  # the ticker thread and the command's own prints take turns
_ticking: list[Progress] = []  # progress lines with a ticker (drawn yet or not): `clear` stops them


def enable(on: bool = True) -> None:
    """Let progress lines be drawn (the CLI calls this; drawn only when stderr is a terminal), and
    report the reading of a job's logs (fxlens.trace.parallel, which sits below this layer)."""
    global _enabled
    _enabled = on
    import fxlens.trace  # the package only: the readers are not imported for this

    fxlens.trace.progress_hook = _reading_logs if on else None


def _reading_logs(items: Iterator, total: int) -> Iterator:
    return steps(items, "", "reading log", total, lambda item: item[0].name)


def _terminal(stream) -> bool:
    try:
        return _enabled and stream.isatty() and os.environ.get("TERM", "") not in ("", "dumb")
    except (AttributeError, ValueError, OSError):
        return False


class Progress:
    """Steps of one long wait; `step()` after each, `close()` (or `with`) at the end.

    Args:
        command: the command waiting ("doctor"; "" for a wait of any command, like reading logs).
        what: what a step is ("run", "log", "query").
        total: how many steps there will be, when known.
        after_s: seconds of waiting before the line is first drawn (default AFTER_S).
    """

    def __init__(
        self, command: str, what: str, total: int | None = None, stream=None, after_s: float | None = None
    ):
        self.head = f"fxlens {command}:" if command else "fxlens:"
        self.what, self.total = what, total
        stream = stream if stream is not None else sys.stderr
        # the CLI's SafeStream would show our escape sequences as text: the line is sanitised here
        self.stream = stream._stream if isinstance(stream, SafeStream) else stream
        self.after_s = AFTER_S if after_s is None else after_s
        self.t0 = self._last = time.perf_counter()
        self.steps: list[tuple[str, float]] = []  # (label, seconds) of each step done
        self.tty = _terminal(self.stream)
        self._running: str | None = None  # the step under way (`begin`), until `step` ends it
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def begin(self, label: str = "") -> None:
        """A step starts (LABEL says which). Until it ends the line shows it with its clock,
        redrawn every TICK_S: a first step of minutes (doctor's first run) is never a blank screen."""
        self._running = label
        if self.tty and self._ticker is None:
            self._ticker = threading.Thread(target=self._tick, name="fxlens-progress", daemon=True)
            _ticking.append(self)
            self._ticker.start()

    def _tick(self) -> None:
        while not self._stop.wait(TICK_S):
            with _lock:
                if self._stop.is_set():
                    return
                if self._running is not None and time.perf_counter() - self.t0 >= self.after_s:
                    self._draw(self.line())

    def step(self, label: str = "") -> float:
        """One step done (LABEL says which); the seconds it took."""
        now = time.perf_counter()
        took, self._last = now - self._last, now
        self.steps.append((label, took))
        self._running = None
        if self.tty and now - self.t0 >= self.after_s:
            with _lock:
                self._draw(self.line(now))
        return took

    def line(self, now: float | None = None) -> str:
        """`fxlens doctor: run 3/6 (compiled 2) · 41.2s · last step 12.9s`."""
        now = time.perf_counter() if now is None else now
        n = len(self.steps)
        if self._running is not None:  # `run 1/6 (eager, round 1) · 12.0s · this step 12.0s`
            n, label, last = n + 1, self._running, f" · this step {_secs(now - self._last)}"
        else:
            label = self.steps[-1][0] if self.steps else ""
            last = f" · last step {_secs(self.steps[-1][1])}" if self.steps else ""
        count = f"{n}/{self.total}" if self.total else str(n)
        return f"{self.head} {self.what} {count}{f' ({label})' if label else ''} · {now - self.t0:.1f}s{last}"

    def _draw(self, text: str) -> None:
        cols = _columns(self.stream)
        text = for_terminal(text)[: max(10, cols - 1)]
        try:
            self.stream.write(_CLEAR + text)
            self.stream.flush()
        except (OSError, ValueError):
            self.tty = False
            return
        if self not in _shown:
            _shown.append(self)

    def close(self) -> None:
        """Take the line off the screen (what the command prints next starts on a clean line)."""
        with _lock:
            self._stop.set()  # (under the lock: the ticker never draws after this)
            if self in _ticking:
                _ticking.remove(self)
            self._clear()

    def _clear(self) -> None:
        if self in _shown:
            _shown.remove(self)
            try:
                self.stream.write(_CLEAR)
                self.stream.flush()
            except (OSError, ValueError):
                pass

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def steps(
    items: Iterable[T], command: str, what: str, total: int | None = None, label: Callable[[T], str] = str
) -> Iterator[T]:
    """Yield ITEMS, each counted as a step once the caller is done with it (the line says how long
    each took); the line goes when the iteration ends."""
    with Progress(command, what, total) as p:
        for item in items:
            yield item
            p.step(label(item))


def echo(line: str, stream=None) -> None:
    """Print LINE for good, above the progress line on screen (redrawn after it)."""
    stream = stream if stream is not None else sys.stdout
    with _lock:
        shown = _shown[-1] if _shown else None
        if shown is not None:
            shown.stream.write(_CLEAR)
            shown.stream.flush()
        print(line, file=stream, flush=True)
        if shown is not None:
            shown._draw(shown.line())


def _secs(s: float) -> str:
    """`12.9s`, or `35ms` under a second (reading a rank's log takes milliseconds)."""
    return f"{s:.1f}s" if s >= 1 else f"{s * 1000:.0f}ms"


def clear() -> None:
    """Take any progress line off the screen (before an error message, on Ctrl-C)."""
    for p in list(_shown) + list(_ticking):
        p.close()


def _columns(stream) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns or 80
    except (AttributeError, ValueError, OSError):
        return 80
