"""`fxlens report` on a real bisect session shows its verdict and runs (issue 20.6: it said "empty
trace"); the runs' inductor cache never lands in the session, and a killed bisect's is removed."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from schema_check import validate

from fxlens.bisect.cache import CACHE_PREFIX, INDUCTOR_CACHE, cache_dir, claim_cache

SCRIPTS = Path(__file__).parent / "scripts"


def _fxlens(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "fxlens.cli", *map(str, args)], capture_output=True, text=True, cwd=cwd
    )


def test_report_on_a_bisect_session(bisect, tmp_path):
    # the script's own arguments and a torch switch: the bug report's command carries both (issue 34)
    proc, verdict = bisect(
        SCRIPTS / "own_backend.py",
        "--steps",
        "3 4",
        opts=("--check", "crash"),
        env={"TORCHDYNAMO_VERBOSE": "0"},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    session = Path(verdict["session"])
    assert not (session / INDUCTOR_CACHE).exists() and not cache_dir(session).exists()

    rep = _fxlens("report", "--json", tmp_path / "r.json", session)
    assert rep.returncode == 0, rep.stderr
    assert f"a bisect session of {SCRIPTS / 'own_backend.py'}, {verdict['runs']} run(s)" in rep.stdout
    assert f"verdict: {verdict['summary']}" in rep.stdout
    assert "runs/01-as-asked" in rep.stdout and "empty trace" not in rep.stdout + rep.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    validate("report", report)  # the published report schema holds (the keys added are allowed)
    # the report JSON's contract keys stay (this session compiled nothing itself), with more added
    for key in ("graphs", "graph_breaks", "recompiles", "recompile_limit_hits", "kernels", "fallbacks"):
        assert report[key] == []
    assert report["command"] == "bisect" and report["verdict"]["summary"] == verdict["summary"]
    assert len(report["runs"]) == verdict["runs"] and report["runs"][0]["logs"] >= 1
    md = _fxlens("report", "--format", "markdown", session)
    assert md.returncode == 0 and "fxlens bisect: own\\_backend.py" in md.stdout, md.stderr
    typed = "fxlens bisect --check crash own_backend.py --steps '3 4'"  # after the switches it ran under
    for shown in (re.search(r"command: `([^`]*)`", md.stdout)[1], re.search(r"command: (.*)", rep.stdout)[1]):
        assert shown.endswith(typed) and "TORCHDYNAMO_VERBOSE=0 " in shown, shown
    info = json.loads((session / "session.json").read_text())
    assert info["exit_code"] == 0 and not info.get("interrupted")


def test_a_killed_bisects_cache_is_removed_by_the_next(tmp_path):
    # a bisect killed by SIGKILL never ran its cleanup: its cache dir names a pid that is gone
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = cache_dir(tmp_path / "killed")
    stale.mkdir(parents=True)
    (stale / ".owner").write_text(str(dead.pid))
    (stale / "big.so").write_bytes(b"x" * 1000)
    live = cache_dir(tmp_path / "running")  # another bisect still running: left alone
    live.mkdir(parents=True)
    (live / ".owner").write_text(str(os.getpid()))
    try:
        mine = claim_cache(tmp_path / "new")
        assert not stale.exists() and live.exists()
        assert mine.name.startswith(CACHE_PREFIX) and not str(mine).startswith(str(tmp_path))
    finally:
        for d in (stale, live, cache_dir(tmp_path / "new")):
            subprocess.run(["rm", "-rf", str(d)])
