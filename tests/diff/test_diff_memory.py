"""`fxlens diff` of two real doctor sessions shows the memory change: the recompile storm of
tests/doctor/scripts/mem_storm.py (one 4 MiB constant per cache entry, six shapes) against the same
script compiled with `dynamic=True` (one entry: one copy). Ground truth: each doctor run's own JSON."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

STORM = Path(__file__).parents[1] / "doctor" / "scripts" / "mem_storm.py"


def _doctor(tmp_path: Path, script: Path) -> dict:
    js = tmp_path / f"{script.stem}.json"
    env = {**os.environ, "FXLENS_SESSIONS_DIR": str(tmp_path / "s")}
    cmd = [sys.executable, "-m", "fxlens.cli", "doctor", "--budget", "1", "--json", str(js), str(script)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(js.read_text())


def _mib(n: int) -> float:
    """MiB to the tenth, as the diff prints them (its table drops a trailing .0)."""
    return round(n / (1 << 20), 1)


@pytest.mark.slow  # two doctor runs (~1-2 min each here)
def test_diff_shows_the_memory_a_fix_saves(tmp_path):
    dynamic = tmp_path / "mem_dynamic.py"
    dynamic.write_text(STORM.read_text().replace("dynamic=False", "dynamic=True"))
    a, b = _doctor(tmp_path, STORM), _doctor(tmp_path, dynamic)
    held = {
        side: next(p["bytes"] for p in r["peak_memory"]["breakdown"] if p["cause"] == "held_by_compiled_code")
        for side, r in (("a", a), ("b", b))
    }
    assert held["a"] == 6 * (4 << 20) and held["b"] == 4 << 20  # one 4 MiB copy per cache entry
    cmd = [sys.executable, "-m", "fxlens.cli", "diff", a["session"], b["session"]]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300).stdout
    assert "Doctor memory, MiB" in out, out
    row = next(ln for ln in out.splitlines() if ln.strip().startswith("held_by_compiled_code"))
    assert [float(x) for x in row.split()[1:3]] == [_mib(held["a"]), _mib(held["b"])], row
    peak = next(ln for ln in out.splitlines() if ln.strip().startswith("peak compiled"))
    want = [_mib(a["peak_memory"]["compiled"]), _mib(b["peak_memory"]["compiled"])]
    assert [float(x) for x in peak.split()[2:4]] == want, peak
