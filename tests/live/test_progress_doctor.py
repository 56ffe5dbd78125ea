"""`fxlens doctor` on a terminal: its progress line is up before its first run ends, and redrawn
while that run goes on. Ground truth for "before the first run ended": the end time that run
recorded in its own session.json (`finished`), against the arrival time of each redraw."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
import textwrap
import time

import pytest

SCRIPT = textwrap.dedent(
    """
    import time
    import torch

    f = torch.compile(lambda x: x * 2 + 1, backend="eager")
    for _ in range(3):
        f(torch.ones(4))
    time.sleep(3)  # a run that takes a while, as a real model's does
    """
)


@pytest.mark.slow  # two runs of a script that imports torch: ~60 s here
def test_doctor_progress_line_is_up_and_moving_during_its_first_run(tmp_path):
    script = tmp_path / "slow.py"
    script.write_text(SCRIPT)
    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm", "FXLENS_SESSIONS_DIR": str(tmp_path / "sessions"), "COLUMNS": "120"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "fxlens.cli", "doctor", "--rounds", "1", str(script)],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        cwd=tmp_path,
        env=env,
    )
    os.close(slave)
    arrivals: list[tuple[float, str]] = []
    raw = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        raw += chunk
        now = time.time()
        arrivals += [
            (now, m.decode()) for m in re.findall(rb"\r\x1b\[K(fxlens doctor: run [^\r\n\x1b]*)", chunk)
        ]
    os.close(master)
    assert proc.wait(timeout=60) == 0, raw[-3000:]
    (sdir,) = (tmp_path / "sessions").iterdir()
    first_end = json.loads((sdir / "eager-1" / "session.json").read_text())["finished"]
    during = [line for t, line in arrivals if t < first_end]
    assert len(during) >= 2 and len(set(during)) >= 2, arrivals[:5]  # up, and redrawn with a new clock
    assert all(line.startswith("fxlens doctor: run 1/2 (eager, round 1) · ") for line in during), during
