"""`fxlens demo` runs its bundled examples for real (the capture step by default, all steps when slow)."""

import os
import subprocess
import sys

import pytest


def _demo(tmp_path, *args):
    env = {**os.environ, "FXLENS_SESSIONS_DIR": str(tmp_path / "sessions")}
    env.pop("FXLENS_INJECT", None)
    return subprocess.run(
        [sys.executable, "-m", "fxlens.cli", "demo", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=900,
    )


def test_demo_capture_step_shows_break_recompile_and_kernels(tmp_path):
    proc = _demo(tmp_path, "--only", "run")
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "demo_model.py:23" in out and "Tensor.item()" in out  # the graph break, at its line
    assert "input `x`, dim 0 took values 8, 4" in out  # the last short batch recompiles
    assert "fxlens kernels:" in out and "fxk_forward_" in out  # fxlens's own Triton kernels
    # the recompile (dynamic batch) specialises at run time, and its kernels still carry compile id 0/1
    assert any(line.startswith("0/1") and "fxk_backward_" in line for line in out.splitlines())
    assert "fxlens tui " in out.splitlines()[-1]


@pytest.mark.slow
def test_full_demo(tmp_path):
    proc = _demo(tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "verdict: accuracy first at stage fxlens_nofusion" in out and "fxk_forward_0_erf" in out
    assert "reproduced 3/3 fresh runs" in out
    assert "fxlens minify --kernel: kernel fxk_forward_0_erf" in out and "(exit 1)" in out
    assert "Findings, by measured or structural impact" in out  # doctor's heading (was stale)
    # the steps before doctor ran side by side in child demos; their output still comes in order
    titles = [ln[:3] for ln in out.splitlines() if ln[:1] == "[" and ln[2:3] == "]"]
    assert titles == ["[1]", "[2]", "[3]", "[4]", "[5]"]
    assert "side by side" in out.splitlines()[-2] and "fxlens-demo-" not in out
