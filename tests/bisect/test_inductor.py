"""Inductor failures: fxlens steps eager -> aot_eager -> aot_eager_decomp_partition -> inductor,
narrows to the graph, then hands that graph to torch's CompilerBisector.

Inductor compiles C++ on CPU (tens of seconds a run on a loaded 2-core box), and CompilerBisector
tries each of inductor's subsystems in turn, so these are slow tests.
"""

import pytest
from bisect_helpers import MULTI, def_line

pytestmark = pytest.mark.slow


def test_inductor_stage_and_graph_without_handover(bisect):
    proc, v = bisect(MULTI, "--inductor-relu-bug", "compile_error", "--no-compiler-bisector")
    assert proc.returncode == 0, proc.stderr
    assert v["backend"] == "inductor" and v["first_failing_stage"] == "inductor"
    assert [s["ok"] for s in v["stages"]] == [True, True, True, False]
    assert v["failure"]["kind"] == "crash"
    c = v["culprit"]
    assert (c["compile_id"], c["function"], c["line"]) == ("2/0", "block", def_line("block"))
    assert c["kernel"] is None and v["compiler_bisector"] is None


def test_inductor_relu_bug_handed_to_compiler_bisector(bisect):
    proc, v = bisect(MULTI, "--inductor-relu-bug", "accuracy", timeout=1800)
    assert proc.returncode == 0, proc.stderr
    assert v["first_failing_stage"] == "inductor" and v["failure"]["kind"] == "accuracy"
    assert v["culprit"]["compile_id"] == "2/0"
    cb = v["compiler_bisector"]
    assert "error" not in cb, cb
    # the relu bug lives in inductor's lowering of relu: CompilerBisector names that lowering
    assert cb["backend"] == "inductor" and cb["subsystem"] == "lowerings"
    assert "relu" in (cb["debug_info"] or "")
    assert v["runs"] == 5 + cb["runs"]
    assert "CompilerBisector: inductor / lowerings" in proc.stdout
