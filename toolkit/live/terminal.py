"""`fxlens run` on a terminal: the script's output passes through, with one live status line below it.

The script's stdout and stderr are pseudo-terminals (`pty`) whose other ends fxlens reads: the
script still sees a terminal (`isatty()` is true, Python line-buffers, colours and progress bars
behave as on the real one, its size is the real terminal's), and fxlens writes every chunk of it
to its own stdout/stderr unchanged, after clearing the status line, and redraws the status line
after it. One thread does both (a `select` loop), so the two never interleave mid-line. The status
line is drawn only when the script's output ends at a line start: a script's unfinished line (a
progress bar redrawn with `\\r`) is never overwritten; the status line waits until it ends.

The trace is polled every `interval` seconds (`FXLENS_LIVE_INTERVAL`, default 0.5) from the same
thread: only the bytes appended since the last poll are read (`fxlens.live.tail`).

What changes for the script: its output reaches the terminal through fxlens (a few ms later at
most), and a stream fxlens's own output does not go to a terminal (`fxlens run x.py > out.txt`)
is the script's own file, untouched. It gets no SIGWINCH (it is not in the terminal's foreground
group, as before), but its pty takes the new size when the terminal is resized.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import select
import signal
import struct
import sys
import termios
import threading
import time

from fxlens.live.state import LiveState
from fxlens.live.status import event_line, status_line
from fxlens.live.tail import TraceTail

_CLEAR = b"\r\x1b[K"
# the status line is redrawn once the script's output pauses this long: a script printing fast
# gets its lines through without a clear and redraw of the status line around each chunk
_REDRAW_S = 0.05


def wanted(quiet: bool = False) -> bool:
    """Whether `fxlens run` shows the live view: stderr is a terminal that can clear a line, and
    the user did not ask for quiet."""
    if quiet:
        return False
    try:
        tty = os.isatty(sys.stderr.fileno())
    except (AttributeError, ValueError, OSError):
        return False
    return tty and os.environ.get("TERM", "") not in ("", "dumb")


def _winsize(fd: int) -> bytes | None:
    try:
        return fcntl.ioctl(fd, termios.TIOCGWINSZ, b"\0" * 8)
    except OSError:
        return None


class LiveRelay:
    """The relay and the status line for one run; `with relay:` around starting and waiting for it.

    Args:
        trace_dir: the TORCH_TRACE directory the run writes (may not exist yet).
        interval: seconds between polls of the trace.
        relay_stdout: also pass the script's stdout through (when fxlens's stdout is the terminal).
    """

    def __init__(self, trace_dir, interval: float = 0.5, relay_stdout: bool | None = None):
        self.tail = TraceTail(trace_dir)
        self.state = LiveState()
        self.interval = interval
        self.err_fd = sys.stderr.fileno()
        try:
            out_fd = sys.stdout.fileno()
        except (AttributeError, ValueError, OSError):  # a stdout with no file (captured): left alone
            out_fd, relay_stdout = -1, False
        if relay_stdout is None:
            relay_stdout = os.isatty(out_fd)
        # (master we read, fd we write to); the slaves are what the child gets
        self._pairs: list[tuple[int, int]] = []
        self.stdout = self.stderr = None
        if relay_stdout:
            master, self.stdout = self._pty()
            self._pairs.append((master, out_fd))
        master, self.stderr = self._pty()
        self._pairs.append((master, self.err_fd))
        self._shown = ""  # the status text on screen now ("" when none)
        self._at_line_start = True
        self._hidden = False  # the script wrote since the status line was last drawn
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="fxlens-live", daemon=True)
        self._old_winch = None
        self.poll_s = 0.0  # seconds spent reading the trace (for the overhead benchmark)
        self.broken: Exception | None = None  # why the status line stopped (an fxlens bug)
        self._events: list = []  # events not yet printed

    def _pty(self) -> tuple[int, int]:
        master, slave = pty.openpty()
        size = _winsize(self.err_fd)
        if size is not None:
            with contextlib.suppress(OSError):
                fcntl.ioctl(slave, termios.TIOCSWINSZ, size)
        return master, slave

    # ---- lifetime ----------------------------------------------------------------------------

    def __enter__(self) -> LiveRelay:
        self._thread.start()
        if threading.current_thread() is threading.main_thread():
            with contextlib.suppress(ValueError, OSError):
                self._old_winch = signal.signal(signal.SIGWINCH, self._resized)
        return self

    def child_started(self) -> None:
        """Close our copies of the script's ends, so its exit is seen as the end of its output."""
        for fd in (self.stdout, self.stderr):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.stdout = self.stderr = None

    def __exit__(self, *exc) -> None:
        self.child_started()
        self._stop.set()
        self._thread.join(timeout=5)
        if self._old_winch is not None:
            with contextlib.suppress(ValueError, OSError):
                signal.signal(signal.SIGWINCH, self._old_winch)
        for master, _ in self._pairs:
            with contextlib.suppress(OSError):
                os.close(master)

    def _resized(self, signum, frame) -> None:
        size = _winsize(self.err_fd)
        if size is None:
            return
        for master, _ in self._pairs:
            with contextlib.suppress(OSError):
                fcntl.ioctl(master, termios.TIOCSWINSZ, size)

    # ---- the loop ----------------------------------------------------------------------------

    def _loop(self) -> None:
        open_fds = {m: out for m, out in self._pairs}
        next_poll = 0.0
        try:
            while open_fds and not self._stop.is_set():
                timeout = max(0.0, next_poll - time.monotonic())
                if self._relay(open_fds, min(timeout, _REDRAW_S) if self._hidden else timeout):
                    continue  # more output may follow at once: redraw once it pauses
                if self._hidden:
                    self._draw()
                if time.monotonic() >= next_poll:
                    self._poll()
                    next_poll = time.monotonic() + self.interval
            # the run ended: what it wrote last, then the trace's last records
            deadline = time.monotonic() + 1.0
            while open_fds and time.monotonic() < deadline and self._relay(open_fds, 0.05):
                pass
            self._poll(final=True)
        finally:
            self._clear()

    def _relay(self, open_fds: dict[int, int], timeout: float) -> bool:
        """Pass on what the script wrote within `timeout` seconds; whether anything came."""
        try:
            ready, _, _ = select.select(list(open_fds), [], [], timeout)
        except (OSError, ValueError):
            return False
        for master in ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer closed its end
                data = b""
            if not data:
                del open_fds[master]
                continue
            try:
                self._clear()
                _write(open_fds[master], data)
            except OSError:  # our terminal is gone (a closed ssh): keep draining, or the script blocks
                pass
            self._at_line_start = data.endswith(b"\n")
            self._hidden = True
        return bool(ready)

    def _poll(self, final: bool = False) -> None:
        if self.broken is None:
            t0 = time.perf_counter()
            try:
                self._events.extend(self.state.update(self.tail.poll()))
            except Exception as e:  # noqa: BLE001 - the live view must never cost the run: the
                # script's output keeps flowing, only the status line stops
                self.broken = e
            self.poll_s += time.perf_counter() - t0
        if final and self._events and not self._at_line_start:
            _write(self.err_fd, b"\n")  # the script ended mid-line: the events go below it
            self._at_line_start = True
        if not final:
            self._draw()
        elif self._at_line_start:
            self._flush_events()

    def _flush_events(self) -> None:
        """The new events, above the status line (held while the script's line is unfinished)."""
        if self._events:
            self._clear()
            text = "".join(event_line(e) + "\n" for e in self._events)
            _write(self.err_fd, text.encode("utf-8", "replace"))
            self._events.clear()

    def _draw(self) -> None:
        if not self._at_line_start:
            return
        try:
            self._flush_events()
            if self.broken is not None:
                return
            text = status_line(self.state, width=max(10, _columns(self.err_fd) - 1))
            if text != self._shown:
                _write(self.err_fd, _CLEAR + text.encode("utf-8", "replace"))
                self._shown = text
            self._hidden = False
        except Exception as e:  # noqa: BLE001 - as in _poll: the script's output keeps flowing
            self.broken = e

    def _clear(self) -> None:
        if self._shown:
            _write(self.err_fd, _CLEAR)
            self._shown = ""


def _columns(fd: int) -> int:
    """The terminal's width (a terminal that reports none: $COLUMNS, else 80)."""
    size = _winsize(fd)
    cols = struct.unpack("HHHH", size)[1] if size else 0
    if not cols:
        try:
            cols = int(os.environ.get("COLUMNS", "") or 80)
        except ValueError:
            cols = 80
    return cols


def _write(fd: int, data: bytes) -> None:
    while data:
        try:
            n = os.write(fd, data)
        except InterruptedError:
            continue
        except BlockingIOError:
            time.sleep(0.01)
            continue
        data = data[n:]
