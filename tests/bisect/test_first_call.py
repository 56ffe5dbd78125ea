"""Issue 34: bisect never calls a compiled graph before the user does, and judges a forward-only
script on its outputs. Ground truth: the scripts run by plain python, backend by backend."""

import pytest
from bisect_helpers import SCRIPTS, ladder_by_hand

FIRST_CALL = SCRIPTS / "first_call_check.py"
BACKWARD = SCRIPTS / "backward_only.py"
ALIASING = "must not also be an input to this custom operator"


def test_a_failure_on_the_first_call_only_is_found(bisect):
    truth = ladder_by_hand(FIRST_CALL, [(["eager"], False), (["aot_eager"], False)])
    assert truth[0] == (0, "")
    assert truth[1][0] == 1 and truth[1][1].startswith("RuntimeError") and ALIASING in truth[1][1]
    proc, v = bisect(FIRST_CALL)
    assert proc.returncode == 0, proc.stderr
    # before: the check's probe made the first call, dropped its exception: "nothing fails"
    assert v["outcome"] == "fails" and v["first_failing_stage"] == "aot_eager", v["summary"]
    assert v["failure"]["kind"] == "crash" and ALIASING in v["failure"]["error"]
    assert v["culprit"]["function"] == "f"


def _ladder(mode: str):
    return ladder_by_hand(BACKWARD, [([mode, "eager"], False), ([mode, "aot_eager"], False), ([mode], False)])


@pytest.mark.slow  # ~10 s CPU; the repro_cases/fixed_* case of the same bug runs by default
def test_a_forward_only_script_is_not_judged_on_gradients(bisect):
    # the script passes with its own backend, whose gradients are wrong: nothing fails
    assert _ladder("exact") == [(0, "")] * 3
    proc, v = bisect(BACKWARD, "exact")
    assert proc.returncode == 0, proc.stderr
    assert v["outcome"] == "nothing_fails", v["summary"]


@pytest.mark.slow  # ~10 s CPU; the repro_cases/fixed_* case of the same bug runs by default
def test_gradients_are_judged_where_the_script_differentiates(bisect):
    truth = _ladder("backward")
    assert truth[:2] == [(0, "")] * 2 and truth[2][0] == 1 and "not close" in truth[2][1]
    proc, v = bisect(BACKWARD, "backward")
    assert proc.returncode == 0, proc.stderr
    assert v["first_failing_stage"] == f"{BACKWARD}:bad_grads" and v["failure"]["kind"] == "accuracy"
    assert v["failure"]["divergence"]["what"] == "grad of input 0"


@pytest.mark.slow
def test_a_forward_only_failure_names_the_output_not_a_gradient(bisect):
    """~8 s: the outputs and the gradients both diverge; the script only ever sees the output."""
    truth = _ladder("shifted")
    assert truth[:2] == [(0, "")] * 2 and truth[2][0] == 1
    proc, v = bisect(BACKWARD, "shifted")
    assert proc.returncode == 0, proc.stderr
    assert v["failure"]["kind"] == "accuracy"
    assert v["failure"]["divergence"]["what"] == "output 0", v["failure"]
