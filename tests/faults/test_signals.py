"""Ctrl-C (SIGINT to the process group, as a terminal sends it) and SIGTERM during run, bisect,
minify and doctor: every child and worker is ended (no orphans), the session stays readable, no
reproducer is left looking complete, and the exit status is 130 / 143.

The watched script compiles a graph, starts a grandchild of its own, writes a marker file and hangs;
the signal goes out once the marker exists. Orphans are found by scanning /proc for the test's mark
in the environment, which every descendant inherits.
"""

import json
import os
import signal
import uuid

import pytest
from proc_helpers import fxlens, marked, no_orphans, start, wait_for

from fxlens.trace.session import Session

SCRIPT = os.path.join(os.path.dirname(__file__), "scripts", "hang_forks.py")
EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143}


def _interrupt(tmp_path, sig, *args):
    """Start `fxlens ARGS SCRIPT marker`, signal it once the script is up; (proc, stderr, mark)."""
    mark = uuid.uuid4().hex
    marker = tmp_path / "marker"
    env = {"FXLENS_SESSIONS_DIR": str(tmp_path / "sessions"), "FXLENS_REPRO_DIR": str(tmp_path / "repro")}
    proc = start(*args, SCRIPT, marker, mark=mark, env=env, cwd=tmp_path)
    try:
        wait_for(marker.exists, 240, "the script's marker file")
        # the script's grandchild is up too: this is what must not be orphaned
        assert len(marked(mark)) >= 3
        if sig == signal.SIGINT:
            os.killpg(proc.pid, sig)  # what Ctrl-C does: the whole foreground group
        else:
            proc.send_signal(sig)  # what `kill PID` does: fxlens alone
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    no_orphans(mark)
    return proc, err, mark


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_run(tmp_path, sig):
    session = tmp_path / "s"
    proc, err, _ = _interrupt(tmp_path, sig, "run", "--session", session)
    assert proc.returncode == EXIT[sig], err
    assert err.strip().splitlines()[-1] in ("fxlens: interrupted", "fxlens: terminated")
    # and where what was captured so far is (issue 20): the session's path, as a command to paste
    assert f"what was captured so far: fxlens report {session}" in err, err[-2000:]
    info = json.loads((session / "session.json").read_text())
    assert info["interrupted"] is True and info["exit_code"] is None
    # the session is data: what was captured before the signal is still reported
    rep = fxlens("report", session)
    assert rep.returncode == 0 and "1 graph(s)" in rep.stdout, rep.stderr


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_doctor(tmp_path, sig):
    proc, err, _ = _interrupt(tmp_path, sig, "doctor")
    assert proc.returncode == EXIT[sig], err
    assert "Traceback" not in err


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_bisect(tmp_path, sig):
    proc, err, _ = _interrupt(tmp_path, sig, "bisect", "--backend", "eager")
    assert proc.returncode == EXIT[sig], err
    assert "Traceback" not in err
    (sdir,) = (tmp_path / "sessions").iterdir()
    # issue 34: an interrupted bisect says so (it left `exit_code: null` and no flag)
    info = json.loads((sdir / "session.json").read_text())
    assert info["interrupted"] is True and info["exit_code"] == EXIT[sig]
    for run in (sdir / "runs").iterdir():  # each child run's session opens and reads
        assert isinstance(Session.open(run).ranks, list)


@pytest.mark.slow  # ~45 s here: the worker pool imports torch beside the capture run
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_minify(tmp_path, sig):
    # the pool's workers start with the capture run: both must end
    proc, err, _ = _interrupt(tmp_path, sig, "minify", "--backend", "eager")
    assert proc.returncode == EXIT[sig], err
    assert "Traceback" not in err
    repro = tmp_path / "repro"
    left = [p.name for p in repro.iterdir()] if repro.exists() else []
    assert not [n for n in left if n.endswith(".py") and not n.endswith(".partial.py")], left
