"""Run the real `fxlens` CLI, find processes it left behind, and wait for marker files."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

FXLENS = [sys.executable, "-m", "fxlens.cli"]
# every process a fault test starts carries this in its environment, so a scan of /proc finds the
# test's own descendants (and nobody else's) even after they were re-parented to init
MARK = "FXLENS_FAULT_TEST_MARK"


def fxlens(*args, cwd=None, env=None, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*FXLENS, *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        timeout=timeout,
    )


def start(*args, mark: str, cwd=None, env=None) -> subprocess.Popen:
    """Start `fxlens ARGS` in its own session (as a shell would), its processes marked `mark`."""
    return subprocess.Popen(
        [*FXLENS, *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {}), MARK: mark},
        start_new_session=True,
    )


def marked(mark: str) -> list[int]:
    """Live processes whose environment holds MARK=mark (zombies excluded: they are gone)."""
    needle = f"{MARK}={mark}".encode()
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            state = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
            if state != "Z" and needle in (d / "environ").read_bytes().split(b"\0"):
                pids.append(int(d.name))
        except (OSError, IndexError):
            continue
    return pids


def wait_for(pred, timeout: float, what: str, step: float = 0.05):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        v = pred()
        if v:
            return v
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def no_orphans(mark: str, timeout: float = 10.0) -> None:
    """Every process started under `mark` is gone (give the kernel a moment to reap)."""
    try:
        wait_for(lambda: not marked(mark), timeout, "marked processes to exit")
    except AssertionError:
        left = marked(mark)
        cmds = {p: _cmdline(p) for p in left}
        for p in left:  # clean up after ourselves so one failure does not leak into other tests
            try:
                os.kill(p, 9)
            except OSError:
                pass
        raise AssertionError(f"orphaned processes: {cmds}") from None


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:200]
    except OSError:
        return "?"


def one_line_error(proc, *needles) -> str:
    """The CLI failed with one `fxlens ...: error:` line and no fxlens traceback."""
    assert proc.returncode != 0, proc.stdout[-2000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("fxlens"), proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    for n in needles:
        assert n in last, last
    return last
