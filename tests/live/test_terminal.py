"""`fxlens run` on a terminal (a real pty): the script's lines arrive intact, the live status line
is drawn below them and cleared at exit; with stderr not a terminal, nothing of it is written."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import textwrap
import time
from pathlib import Path

import pytest

FXLENS = [sys.executable, "-m", "fxlens.cli"]
HERE = Path(__file__).parent
REPLAY = HERE / "replay_trace.py"
RANK_LOGS = [HERE.parent / "data" / "ranks" / f"rank_{r}.log.gz" for r in (0, 1)]

SCRIPT = textwrap.dedent(
    """\
    import sys, time
    import torch

    def f(x):
        x = x + 1
        print("inside f")  # a graph break
        return x * 2

    print("tty", sys.stdout.isatty(), sys.stderr.isatty(), flush=True)
    cf = torch.compile(f, backend="eager")
    for n in (2, 3):
        print("step", n, flush=True)
        cf(torch.ones(n))
        time.sleep(0.4)  # idle: the status line is drawn
    print("partial", end="", flush=True)
    time.sleep(0.3)  # an unfinished line: the status line waits for its end
    print(" line done", flush=True)
    print("warning on stderr", file=sys.stderr, flush=True)
    """
)


def _screen(raw: bytes) -> list[str]:
    """The lines a terminal shows for RAW (carriage return, newline, erase-to-end-of-line)."""
    lines: list[list[str]] = [[]]
    col = 0
    text = raw.decode("utf-8", "replace")
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\x1b":
            m = re.match(r"\x1b\[[0-9;?]*([A-Za-z])", text[i:])
            if m and m.group(1) == "K":
                del lines[-1][col:]
            i += m.end() if m else 1
            continue
        if ch == "\r":
            col = 0
        elif ch == "\n":
            lines.append([])
            col = 0
        else:
            row = lines[-1]
            row.extend(" " * (col - len(row)))
            row[col : col + 1] = [ch]
            col += 1
        i += 1
    return ["".join(r).rstrip() for r in lines]


def _env(tmp_path: Path) -> dict:
    env = {**os.environ, "TERM": "xterm", "FXLENS_LIVE_INTERVAL": "0.05", "COLUMNS": "150"}
    env["FXLENS_SESSIONS_DIR"] = str(tmp_path / "sessions")
    return env


def _run_on_pty(tmp_path: Path, *args, columns: int = 150) -> tuple[int, bytes]:
    """`fxlens run ARGS` with stdin, stdout and stderr a pty, as in a terminal: (status, bytes shown)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    proc = subprocess.Popen(
        [*FXLENS, "run", "--session", str(tmp_path / "s"), *map(str, args)],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        cwd=tmp_path,
        env=_env(tmp_path),
    )
    os.close(slave)
    raw = b""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: fxlens exited, the pty is closed
            break
        if not chunk:
            break
        raw += chunk
    os.close(master)
    return proc.wait(timeout=30), raw


def _during_run(screen: list[str]) -> list[str]:
    """The screen's lines before fxlens's own summary."""
    end = next(i for i, s in enumerate(screen) if s.startswith("fxlens report:"))
    return [s for s in screen[:end] if s]


def test_status_line_on_a_pty_two_ranks(tmp_path):
    """Two ranks' logs growing (rank 1 recompiles): script lines intact, the recompile said once
    with its rank, the status line drawn and cleared."""
    code, raw = _run_on_pty(tmp_path, REPLAY, RANK_LOGS[0], RANK_LOGS[1])
    assert code == 0, raw[-3000:]
    run = _during_run(_screen(raw))
    steps = [f"step {i}" for i in range(6)]
    assert [s for s in run if not s.startswith("fxlens")] == [
        "tty True True",
        *steps,
        "partial line done",
        "warning on stderr",
    ], run
    (rec,) = [s for s in run if s.startswith("fxlens: [rank 1] recompile of forward")]
    assert "input `x`, dim 0 (expected 8, actual 5)" in rec
    assert re.search(rb"fxlens \| ranks? [0-9, -]+ of 2 compiling: 0/\d forward", raw), raw
    assert not any(s.startswith("fxlens |") for s in _screen(raw))  # cleared at exit


def test_nothing_extra_when_stderr_is_not_a_terminal(tmp_path):
    proc = subprocess.run(
        [*FXLENS, "run", "--session", str(tmp_path / "s"), REPLAY, RANK_LOGS[0], RANK_LOGS[1]],
        capture_output=True,
        cwd=tmp_path,
        env=_env(tmp_path),
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith(b"tty False False\nstep 0\nstep 1\n")
    assert b"fxlens |" not in proc.stderr + proc.stdout and b"\x1b[K" not in proc.stderr
    assert proc.stderr == b"warning on stderr\n"


@pytest.mark.slow
def test_status_line_on_a_pty_real_compile(tmp_path):
    script = tmp_path / "live_script.py"
    script.write_text(SCRIPT)
    code, raw = _run_on_pty(tmp_path, script)
    assert code == 0, raw[-3000:]
    run = _during_run(_screen(raw))
    # the script's own lines, whole, in order; it still writes to a terminal
    assert [s for s in run if not s.startswith("fxlens")] == [
        "tty True True",
        "step 2",
        "inside f",
        "step 3",
        "inside f",
        "partial line done",
        "warning on stderr",
    ], run
    # the new break once, with the user's line (torch's ground truth: the print on line 6)
    (brk,) = [s for s in run if s.startswith("fxlens: new graph break")]
    assert brk.startswith("fxlens: new graph break at live_script.py:6 in f: "), brk
    (rec,) = [s for s in run if s.startswith("fxlens: recompile of f")]
    assert "input `x`, dim 0 (expected 2, actual 3)" in rec
    # the status line was drawn while the script ran, and is gone from the screen at exit
    assert re.search(rb"fxlens \| not compiling \(last: \S+ f", raw), raw
    assert not any(s.startswith("fxlens |") for s in _screen(raw))


def test_status_line_at_80_columns_keeps_counts_and_stage(tmp_path):
    """A real inductor trace replayed into a terminal 80 columns wide: every status line drawn fits
    in 79, and each one drawn while a compile runs keeps its stage, clock and counts."""
    code, raw = _run_on_pty(tmp_path, REPLAY, HERE.parent / "data" / "inductor" / "fused.log.gz", columns=80)
    assert code == 0, raw[-3000:]
    drawn = [m.decode() for m in re.findall(rb"\r\x1b\[K(fxlens [^\r\n\x1b]*)", raw)]
    assert drawn and all(len(s) <= 79 for s in drawn), drawn
    compiling = [s for s in drawn if "waiting" not in s and "idle" not in s and "not compiling" not in s]
    assert compiling, drawn
    for s in compiling:  # `fxlens compiling 0/0 f (inductor_case.py:5) | inductor 0.3s | 1 graph`
        assert re.search(r" \| (\w[\w :-]* )?\d+\.\ds \| \d+ graphs?\b", s), s
