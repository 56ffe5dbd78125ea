"""Issue 34: a backward-only backend bug under the caller's autocast, with the script's backward
after its autocast block (scripts/autocast_backward.py: the backward compiler is wrong only on the
bfloat16 activations autocast saves). Ground truth: the script run by plain python, backend by
backend (fails only with its own); the reproducer run with and without the recorded autocast."""

import os
import shlex
import subprocess
import sys

import pytest
from bisect_helpers import SCRIPTS, ladder_by_hand

SCRIPT = SCRIPTS / "autocast_backward.py"
OWN = f"{SCRIPT}:bf16_backward_bug"  # the script's own aot_autograd object, named by its global


def _truth():
    truth = ladder_by_hand(SCRIPT, [([], False), (["eager"], False), (["aot_eager"], False)])
    assert truth[0][0] == 1 and "not close" in truth[0][1], truth
    assert truth[1:] == [(0, "")] * 2
    return truth


def test_bisect_names_the_scripts_backend_and_the_gradient(bisect):
    """~10 s. Before: the stage was `torch._dynamo.backends.common:compiler_fn` (the aot_autograd
    object's own name) and the suggested `fxlens minify --backend ...` refused it."""
    _truth()
    proc, v = bisect(SCRIPT)
    assert proc.returncode == 0, proc.stderr
    assert v["outcome"] == "fails" and v["first_failing_stage"] == OWN, v["summary"]
    assert [s["ok"] for s in v["stages"]] == [True, True, False]  # eager, aot_eager pass as by hand
    assert v["failure"]["kind"] == "accuracy"
    assert v["failure"]["divergence"]["what"] == "grad of input 1"  # w, the input the script checks
    assert v["culprit"]["function"] == "layer"
    assert shlex.split(v["next"])[:6] == ["fxlens", "minify", "--backend", OWN, "--check", "accuracy"]


def _run(path, env=None):
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300, env=env)


@pytest.mark.slow  # ~40 s CPU: a bisect, a capture run, the reduction and three fresh confirmations
def test_minify_gives_a_reproducer_that_needs_the_autocast(tmp_path, bisect):
    """The command bisect suggests writes a reproducer that fails in a fresh interpreter; with the
    recorded autocast removed it passes (the bug is in the bfloat16 backward only), as the script
    with its autocast block removed would."""
    _truth()
    proc, v = bisect(SCRIPT)
    words = shlex.split(v["next"])
    repro = tmp_path / "repro.py"
    env = {**os.environ, "FXLENS_SESSIONS_DIR": str(tmp_path / "sessions")}
    cmd = [sys.executable, "-m", "fxlens.cli", *words[1:2], "--out", str(repro), *words[2:]]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    src = repro.read_text()
    assert "AUTOCAST = 'cpu:bfloat16'" in src and "# check: accuracy (forward and backward)" in src
    fresh = _run(repro, env={k: val for k, val in os.environ.items() if not k.startswith("FXLENS")})
    assert fresh.returncode == 1 and "fxlens-signature: AccuracyError" in fresh.stderr, fresh.stderr[-2000:]
    without = tmp_path / "repro_no_autocast.py"
    without.write_text(src.replace("AUTOCAST = 'cpu:bfloat16'", "AUTOCAST = ''"))
    assert _run(without).returncode == 0
