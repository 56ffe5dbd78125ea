"""`fxlens diff` gates compile seconds: judged on the compiling thread's CPU clock with a band for the
load, so a 2x compile-time regression is flagged and the same script under a spinner's load is not."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fxlens.diff.compiletime import MIN_DELTA_S, compile_time

SCRIPT = Path(__file__).parent / "scripts" / "loop_n.py"


def _side(cpu: float, wall: float, total: float | None = None) -> dict:
    clock = {"event": "compile_clock", "compiles": 1, "wall_s": wall, "cpu_s": cpu, "load": 1.0, "cores": 2}
    return {"events": [clock], "compile_times": {"total_s": total or wall}}


def test_twice_the_cpu_is_slower_the_same_cpu_under_load_is_not():
    a = _side(2.0, 2.1)
    assert compile_time(a, _side(4.0, 4.2), gate=True)["slower"]
    loaded = compile_time(a, _side(2.4, 7.5), gate=True)  # the wall clock tripled, the work did not
    assert not loaded["slower"] and loaded["judged"]["band"] > compile_time(a, a, True)["judged"]["band"]
    assert not compile_time(_side(0.2, 0.2), _side(0.2 + MIN_DELTA_S / 2, 0.5), gate=True)["slower"]
    assert not compile_time(a, _side(4.0, 4.2), gate=False)["slower"]  # a side that failed: not judged
    assert compile_time({"events": []}, a, gate=True)["judged"] is None  # no clock: shown, not gated


def _spin() -> None:
    while True:
        pass


def _run(tmp_path: Path, name: str, n: int) -> Path:
    session = tmp_path / name
    proc = subprocess.run(
        [sys.executable, "-m", "fxlens.cli", "run", "--quiet", "--session", str(session), str(SCRIPT), str(n)],
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return session


def _clock(session: Path) -> dict:
    events = [json.loads(x) for x in (session / "events.jsonl").read_text().splitlines() if x.strip()]
    return next(e for e in events if e.get("event") == "compile_clock")


@pytest.mark.slow
def test_diff_flags_a_regression_not_a_load_spike(tmp_path, capsys):
    from fxlens.cli import main

    a = _run(tmp_path, "a", 100)
    # three times the layers: about twice the compile (Dynamo's fixed costs do not grow with them)
    b = _run(tmp_path, "b", 300)
    spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(os.cpu_count() or 2)]
    for p in spinners:
        p.start()
    try:
        time.sleep(0.5)
        again = _run(tmp_path, "again", 100)  # the same script, with every core busy spinning
    finally:
        for p in spinners:
            p.kill()
            p.join()
    # ground truth: torch's own compile records, one per compile, as many as each clock paired
    for s in (a, b, again):
        log = next((s / "trace").glob("*.log")).read_text()
        assert log.count('"compilation_metrics"') == _clock(s)["compiles"] == 1
    assert _clock(again)["share"] < 0.9  # the spinners took CPU from the compile
    capsys.readouterr()
    assert main(["diff", str(a), str(b), "--json", str(tmp_path / "ab.json")]) == 1
    out = capsys.readouterr().out
    assert "verdict: B is WORSE than A: compile time x" in out and "SLOWER" in out
    ab = json.loads((tmp_path / "ab.json").read_text())
    assert "compile_s" in ab["worse_on"] and ab["compile_time"]["judged"]["ratio"] >= 1.8
    assert main(["diff", str(a), str(again)]) == 0
    out = capsys.readouterr().out
    assert "within the noise band" in out and "WORSE" not in out
