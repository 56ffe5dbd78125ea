"""The script's standard input: passed on as fxlens got it, recorded, or replayed from a recording.

`fxlens run` and the first run of `fxlens fix` pass their own stdin to the script through a pipe and
keep a copy of every byte they pass (`stdin.bin` in the session): a re-run of `fxlens fix` then
reads what the first run read, not an exhausted pipe (a script that reads its inputs from stdin
would otherwise compute other values in every re-run, and a right fix would read as "changes
results"). A terminal is passed on untouched and not recorded: its input is typed, not replayable.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from pathlib import Path

STDIN_FILE = "stdin.bin"
RECORD = "record"  # run_captured(stdin=RECORD): pass fxlens's stdin on and keep a copy
_CHUNK = 1 << 16


def interactive() -> bool:
    """Whether fxlens's stdin is a terminal (or absent): nothing to record."""
    try:
        return sys.stdin is None or sys.stdin.isatty()
    except (AttributeError, ValueError, OSError):
        return True


@contextlib.contextmanager
def stdin_for(stdin, sdir: Path):
    """The child's stdin for run_captured's `stdin`: None (fxlens's own), RECORD (a pipe fed from
    fxlens's stdin, every byte also written to SDIR/stdin.bin), a path (replayed), or a file object."""
    if stdin is None or (stdin == RECORD and interactive()):
        yield None
        return
    if stdin != RECORD and isinstance(stdin, (str, os.PathLike)):
        with open(stdin, "rb") as f:
            yield f
        return
    if stdin != RECORD:
        yield stdin
        return
    read_end, write_end = os.pipe()
    copy = open(Path(sdir) / STDIN_FILE, "wb")
    thread = threading.Thread(target=_tee, args=(sys.stdin.buffer, write_end, copy), daemon=True)
    thread.start()
    try:
        yield read_end
    finally:
        os.close(read_end)
        thread.join(timeout=0.5)  # a pipe nobody closes: what came so far is the recording
        if not thread.is_alive():
            copy.close()
        else:
            copy.flush()


def _tee(source, write_end: int, copy) -> None:
    """Copy SOURCE to the child's pipe and to COPY until EOF (or until the child stops reading)."""
    try:
        while True:
            chunk = source.read1(_CHUNK) if hasattr(source, "read1") else source.read(_CHUNK)
            if not chunk:
                break
            copy.write(chunk)
            copy.flush()
            try:
                os.write(write_end, chunk)
            except (BrokenPipeError, OSError):
                break
    except (OSError, ValueError):
        pass
    finally:
        with contextlib.suppress(OSError):
            os.close(write_end)
