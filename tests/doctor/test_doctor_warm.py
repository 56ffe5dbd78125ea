"""`fxlens doctor --warm`: cold vs warm start in a private cache folder (fxlens.doctor.warm_start).

Ground truth: torch's own cache artifacts in each run's raw log (a miss in the cold run, a hit in the
warm one), read here without fxlens; and the user's cache folder (TORCHINDUCTOR_CACHE_DIR in the
environment), which doctor's own compiled run fills: the cold run still misses, so it never read it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = """
import torch

def f(x):
    return torch.sin(x) * 2 + torch.cos(x)

g = torch.compile(f)
x = torch.randn(64)
for _ in range(3):
    g(x)
"""


def _artifacts(run: Path) -> list[str]:
    names = []
    for log in (run / "trace").glob("*.log"):
        for line in log.read_text(errors="replace").splitlines():
            if '{"artifact"' in line and "_cache_" in line:
                names.append(json.loads(line[line.index("] {") + 2 :])["artifact"]["name"])
    return names


@pytest.mark.slow  # three inductor compiles, one from an empty cache: ~1 min on 2 busy cores
def test_doctor_warm_cold_misses_then_warm_hits(tmp_path):
    (tmp_path / "small.py").write_text(SCRIPT)
    user_cache = tmp_path / "user-cache"
    env = {
        **os.environ,
        "TORCHINDUCTOR_CACHE_DIR": str(user_cache),
        "FXLENS_SESSIONS_DIR": str(tmp_path / "s"),
    }
    out = tmp_path / "d.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "fxlens.cli",
            "doctor",
            "--warm",
            "--budget",
            "0",
            "--json",
            str(out),
            "small.py",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    w = json.loads(out.read_text())["warm"]
    cold, warm = Path(w["cold"]["session"]), Path(w["warm"]["session"])
    assert "fx_graph_cache_miss" in _artifacts(cold) and "fx_graph_cache_hit" not in _artifacts(cold)
    assert "fx_graph_cache_hit" in _artifacts(warm)
    assert any(user_cache.rglob("*")), "doctor's own compiled run used the user's cache folder"
    assert w["cold"]["caches"]["fx_graph"] == {"miss": 1} and w["warm"]["caches"]["fx_graph"] == {"hit": 1}
    assert w["warm"]["compile_s"] < w["cold"]["compile_s"] and w["saved_s"] > 0
    assert [h["cache"] for h in w["hits"] if h["cache"] == "fx_graph"] == ["fx_graph"]
    # what the warm run still spends, by part: nothing compiled anew; the cold run compiled
    assert "compiling (not from a cache)" in w["cold"]["parts"]["parts"]
    assert "compiling (not from a cache)" not in w["warm"]["parts"]["parts"]
    # the bundle: a third process, its own empty folder, hits from the loaded bundle alone
    b = w["bundle"]
    assert "fx_graph_cache_hit" in _artifacts(Path(b["session"])) and b["caches"]["fx_graph"] == {"hit": 1}
    assert b["bundle_bytes"] > 0 and b["load_s"] > 0
    assert "mega-cache bundle" in proc.stdout and "the warm start still spends" in proc.stdout
    assert "Cold vs warm start" in proc.stdout and "torch.compiler.save_cache_artifacts()" in proc.stdout
