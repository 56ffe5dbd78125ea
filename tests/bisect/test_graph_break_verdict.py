"""`fxlens bisect` after a graph break (issue 12.1): no false "eager fails", real faults found.

Ground truth: the script is correct (it exits 0, and `torch.compile(backend="eager")` matches eager
bit for bit: tests/bisect/test_check_graphs.py), so with no fault nothing may fail; with a fault
injected into the second graph's tanh only, the verdict must be fxlens's first code-generating
stage, graph 1/0, the tanh kernel: not Dynamo.
"""

import subprocess
import sys

import pytest
from bisect_helpers import SCRIPTS

LN_BREAK = SCRIPTS / "ln_break.py"


def test_script_is_correct_on_its_own():
    proc = subprocess.run([sys.executable, str(LN_BREAK)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


def test_no_fault_nothing_fails(bisect):
    proc, v = bisect("--backend", "fxlens_eager", LN_BREAK)
    assert proc.returncode == 0, proc.stderr
    assert v["outcome"] == "nothing_fails" and v["first_failing_stage"] is None
    # run 1 keeps reference (`eager`) calls as they are; this script has no other: run 2 steps them
    assert v["runs"] == 2 and v["references"] == []
    assert "eager fails" not in proc.stdout


@pytest.mark.slow
def test_fault_after_break_is_blamed_on_its_stage_graph_and_kernel(bisect):
    proc, v = bisect("--backend", "fxlens", LN_BREAK, env={"FXLENS_INJECT": "accuracy:aten.tanh"})
    assert proc.returncode == 0, proc.stderr
    assert v["outcome"] != "eager_fails"
    assert v["first_failing_stage"] == "fxlens_nofusion"
    assert {s["stage"]: s["ok"] for s in v["stages"]} == {
        "fxlens_eager": True,
        "fxlens_aot_eager": True,
        "fxlens_nofusion": False,
    }
    assert v["graph"]["ordinal"] == 1 and v["culprit"]["compile_id"] == "1/0"
    assert v["culprit"]["ops"] == ["aten.tanh.default"]
