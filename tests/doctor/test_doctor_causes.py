"""doctor on calls made under inference_mode, frames torch gave up on, and a compile that raised.

Ground truth: torch's own text in the compiled run's report (its hints, its failure) and the scripts
themselves (an inference tensor has no version counter: reading it raises)."""

from pathlib import Path

import pytest
import torch

from fxlens.report.doctor_text import _pays_off

# the script capture's tests run too (one copy for both)
FULLGRAPH_ERROR = Path(__file__).parents[1] / "capture" / "scripts" / "fullgraph_error.py"


def test_an_inference_tensor_has_no_version_counter():
    with torch.inference_mode():
        x = torch.randn(2)
    with pytest.raises(RuntimeError, match="Inference tensors do not track version counter"):
        x._version  # noqa: B018 -- what doctor's argument fingerprint used to read


@pytest.mark.slow
def test_calls_under_inference_mode_are_retimed(doctored):
    proc, result = doctored("inference_mode", "--budget", "10")
    assert proc.returncode == 0, proc.stderr[-3000:]
    (row,) = result["functions"]
    assert row["timing"]["method"] == "interleaved", row["timing"]
    assert "Inference tensors" not in proc.stdout + proc.stderr


@pytest.mark.slow
def test_eager_frame_fix_is_fxlens_own_text(doctored):
    from fxlens.report.headlines import EAGER_FRAME_FIX

    proc, result = doctored("optional_import", "--budget", "5")
    assert proc.returncode == 0, proc.stderr[-3000:]
    (f,) = [f for f in result["findings"] if f["kind"] == "eager_frame"]
    assert f["fix"] == EAGER_FRAME_FIX
    assert "may result in an error" not in f["fix"]


@pytest.mark.slow
def test_a_compile_that_raised_is_not_never_called(doctored):
    proc, result = doctored(FULLGRAPH_ERROR, "--budget", "5")
    assert proc.returncode == 0, proc.stderr[-3000:]
    kinds = [f["kind"] for f in result["findings"]]
    assert "never_called" not in kinds and "compiled_run_failed" in kinds
    (f,) = [f for f in result["findings"] if f["kind"] == "compiled_run_failed"]
    assert "fullgraph=True" in f["message"] and f["line"] == 17


@pytest.mark.parametrize(
    "verdict, break_even, calls, shown",
    [
        ("faster", 12, 40, "12"),
        ("slower", None, 40, "never"),
        ("inconclusive", 12, 40, "-"),
        (None, 3, 40, "-"),
        ("faster", 12, 0, "-"),
    ],
)
def test_pays_off_only_beside_a_verdict(verdict, break_even, calls, shown):
    assert _pays_off({"verdict": verdict, "break_even_calls": break_even, "calls": calls}) == shown
