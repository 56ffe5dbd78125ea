"""Issue 34: judgments fxlens missed or misnamed: a wrong output dtype (equal values), the function
a crash verdict names, the run lines. Ground truth: the scripts run by plain python, backend by
backend, and the model object itself."""

import subprocess
import sys

import pytest
from bisect_helpers import SCRIPTS, ladder_by_hand

WRONG_DTYPE = SCRIPTS / "wrong_dtype.py"
SEQUENTIAL = SCRIPTS / "sequential_crash.py"


def test_a_crash_verdict_names_the_users_function_and_run_lines_balance(bisect):
    truth = ladder_by_hand(SEQUENTIAL, [(["eager"], False), (["aot_eager"], False), ([], False)])
    assert [t[0] for t in truth] == [0, 0, 1] and "BackendCompilerFailed" in truth[2][1]
    proc, v = bisect(SEQUENTIAL)
    assert proc.returncode == 0, proc.stderr
    assert v["failure"]["kind"] == "crash" and v["culprit"]["compile_id"] == "0/0"
    # the compiled frame is the model's forward: torch.nn.Sequential.forward, called at the script's line
    import torch

    assert (
        v["culprit"]["function"] == f"{torch.nn.Sequential.__name__}.{torch.nn.Sequential.forward.__name__}"
    )
    line = next(i for i, ln in enumerate(SEQUENTIAL.read_text().splitlines(), 1) if "torch.compile(" in ln)
    assert (v["culprit"]["file"], v["culprit"]["line"]) == (str(SEQUENTIAL), line)
    assert "(Sequential.forward)" in v["summary"] and "(inner)" not in proc.stdout
    runs = [ln for ln in proc.stdout.splitlines() if ln.startswith("  run ")]
    assert runs and all(ln.count("(") == ln.count(")") for ln in runs), runs


@pytest.mark.slow  # ~10 s CPU; the repro_cases/fixed_* case of the same bug runs by default
def test_a_wrong_output_dtype_is_a_failure(bisect):
    truth = ladder_by_hand(WRONG_DTYPE, [(["eager"], False), (["aot_eager"], False), ([], False)])
    assert truth == [(0, ""), (0, ""), (1, "AssertionError: quantize returned torch.int64")]
    proc, v = bisect(WRONG_DTYPE)
    assert proc.returncode == 0, proc.stderr
    assert v["first_failing_stage"].endswith("wrong_dtype.py:int64_outputs")
    assert v["failure"]["kind"] == "accuracy"
    assert v["failure"]["divergence"]["dtype"] == "int64 (eager: int8)"
    assert "output 0 has dtype int64 where eager's has int8" in v["failure"]["error"]
    assert "--check accuracy" in v["next"]


@pytest.mark.slow
def test_the_suggested_minify_command_reduces_a_wrong_dtype(bisect, tmp_path):
    """~50 s: the `next` command bisect prints works (it refused: nothing diverged)."""
    proc, v = bisect(WRONG_DTYPE)
    cmd = v["next"].split()
    assert cmd[:2] == ["fxlens", "minify"]
    out = tmp_path / "repro.py"
    ran = subprocess.run(
        [sys.executable, "-m", "fxlens.cli", "minify", "--out", str(out), *cmd[2:]],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=900,
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert "compiled output has dtype torch.int64, eager torch.int8" in ran.stdout
    repro = subprocess.run([sys.executable, str(out)], capture_output=True, text=True, timeout=300)
    assert repro.returncode == 1 and "dtype torch.int64" in repro.stderr


SCALAR = SCRIPTS / "scalar_rounding.py"


def _scalar_truth():
    """Without fxlens: eager's `full_like(x, 0.1) * x` in bfloat16 is the fp64 product with 0.1
    rounded to bfloat16 first, at every element; a float32 computation is the fp64 product."""
    import torch

    x = torch.randn(4096).bfloat16()
    eager = torch.full_like(x, 0.1) * x
    rounded = float(torch.tensor(0.1, dtype=torch.bfloat16))
    assert torch.equal(eager, (x.double() * rounded).bfloat16())
    assert not torch.equal(eager, (x.double() * 0.1).bfloat16())
    assert torch.equal((x.float() * 0.1).bfloat16(), (x.double() * 0.1).bfloat16())
    return rounded


@pytest.mark.parametrize(
    "backend", ["upcast", pytest.param("inductor", marks=pytest.mark.slow)]
)  # inductor: ~1 min of C++ compiles
def test_a_scalar_eager_rounds_is_a_semantics_difference_not_a_tolerance(bisect, backend):
    rounded = _scalar_truth()
    truth = ladder_by_hand(SCALAR, [(["eager"], False), (["aot_eager"], False), ([backend], False)])
    assert [t[0] for t in truth] == [0, 0, 1] and "Tensor-likes are not equal" in truth[2][1]
    proc, v = bisect(SCALAR, backend)
    assert proc.returncode == 0, proc.stderr
    sem = v["failure"]["eager_diff"]["semantics"]
    assert (sem["scalar"], sem["rounded"], sem["dtype"], sem["op"]) == (0.1, rounded, "bfloat16", "full_like")
    assert sem["eager_matches_rounded"] == 1.0 and sem["compiled_matches_fp64"] == 1.0
    assert "a semantics difference, not a tolerance" in v["summary"]
    assert "tolerance is tighter" not in v["summary"]
