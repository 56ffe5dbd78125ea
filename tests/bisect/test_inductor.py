"""Inductor failures: fxlens steps eager -> aot_eager -> aot_eager_decomp_partition -> inductor,
narrows to the graph, then hands that graph to torch's CompilerBisector.

Ground truth: multi.py's third graph (2/0, `block`'s resume function) is the only one with
torch.relu, and inductor's `cpp.inject_relu_bug_TESTING_ONLY` breaks inductor's C++ code for relu,
so the stage is inductor, the graph 2/0, and CompilerBisector's culprit the `lowerings` subsystem at
the application that lowers relu. The handover's steps are forked from a warm driver process
(`fxlens.bisect.forked_runs`); FXLENS_BISECT_FRESH_RUNS=1 runs each in a new interpreter instead, and
both must give the same verdict.

Inductor compiles C++ on CPU (seconds to tens of seconds a run on a loaded 2-core box), and
CompilerBisector tries each of inductor's subsystems in turn, so these are slow tests.
"""

import json
import os
import subprocess
import sys

import pytest
from bisect_helpers import MULTI, def_line

# a whole bisect each (the fresh-interpreter one ~10 min on a loaded 2-core box): past the 600 s default
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

BISECTOR_FIELDS = ("backend", "subsystem", "bisect_number", "debug_info", "runs")


def _bisect(tmp, *args, env=None, timeout=1800):
    out = tmp / "verdict.json"
    sessions = tmp / "sessions"
    proc = subprocess.run(
        [sys.executable, "-m", "fxlens.cli", "bisect", "--json", str(out), *map(str, args)],
        capture_output=True,
        text=True,
        env={**os.environ, "FXLENS_SESSIONS_DIR": str(sessions), **(env or {})},
        timeout=timeout,
    )
    return proc, (json.loads(out.read_text()) if out.exists() else None), sessions


def _processes_of(sessions) -> list[str]:
    """Live processes started for this bisect (they inherit its FXLENS_SESSIONS_DIR), zombies aside."""
    mark = f"FXLENS_SESSIONS_DIR={sessions}".encode()
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if mark in env and state != "Z":
            found.append(f"{pid}: {cmd}")
    return found


@pytest.fixture(scope="module")
def accuracy_forked(tmp_path_factory):
    """The accuracy case bisected once with the forked handover (the default), shared by tests."""
    tmp = tmp_path_factory.mktemp("forked")
    proc, v, sessions = _bisect(tmp, MULTI, "--inductor-relu-bug", "accuracy")
    left = _processes_of(sessions) if sys.platform.startswith("linux") else []
    return proc, v, left


def _assert_relu_lowering(v):
    assert v["first_failing_stage"] == "inductor"
    assert v["culprit"]["compile_id"] == "2/0"
    assert (v["culprit"]["function"], v["culprit"]["line"]) == ("block", def_line("block"))
    cb = v["compiler_bisector"]
    assert "error" not in cb, cb
    # the relu bug lives in inductor's lowering of relu: CompilerBisector names that lowering
    assert cb["backend"] == "inductor" and cb["subsystem"] == "lowerings"
    assert "relu" in (cb["debug_info"] or "")
    # 1 (as asked) + 3 (the ladder below inductor) + the bisector's steps: graph 2 is the one the
    # first run's wrapper saw fail, handed over without a run of its own (issue 24)
    assert v["runs"] == 4 + cb["runs"]
    assert v["graph"]["from"] == "run 1's own record"
    labels = [t["label"] for t in v["run_times"]] + [t["label"] for t in cb["run_times"]]
    assert not any("on graph" in label for label in labels), labels
    # where each run's time went: every run compiled, so every run says when it started
    for t in v["run_times"] + cb["run_times"]:
        assert None not in (t["startup_s"], t["import_s"]), t
        assert sum(t[k] for k in ("startup_s", "import_s", "compile_s", "check_s", "run_s")) == pytest.approx(
            t["seconds"], abs=0.05
        )


def test_inductor_stage_and_graph_without_handover(bisect):
    proc, v = bisect(MULTI, "--inductor-relu-bug", "compile_error", opts=("--no-compiler-bisector",))
    assert proc.returncode == 0, proc.stderr
    assert v["backend"] == "inductor" and v["first_failing_stage"] == "inductor"
    assert [s["ok"] for s in v["stages"]] == [True, True, True, False]
    assert v["failure"]["kind"] == "crash"
    c = v["culprit"]
    assert (c["compile_id"], c["function"], c["line"]) == ("2/0", "block", def_line("block"))
    assert c["kernel"] is None and v["compiler_bisector"] is None


def test_inductor_relu_bug_handed_to_compiler_bisector(accuracy_forked):
    proc, v, _ = accuracy_forked
    assert proc.returncode == 0, proc.stderr
    assert v["failure"]["kind"] == "accuracy"
    _assert_relu_lowering(v)
    assert "CompilerBisector: inductor / lowerings" in proc.stdout


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_forked_handover_leaves_no_process_behind(accuracy_forked):
    proc, v, left = accuracy_forked
    assert v is not None and v["compiler_bisector"]["runs"] > 0, proc.stderr
    assert left == []


def test_forked_handover_verdict_equals_fresh_interpreters(accuracy_forked, tmp_path):
    _, forked, _ = accuracy_forked
    # no hand-over budget: fresh-interpreter steps are slow, and a verdict cut at the default 300 s
    # (as on a loaded 2-core box) has nothing to compare
    proc, fresh, _ = _bisect(
        tmp_path,
        "--compiler-bisector-budget",
        "0",
        MULTI,
        "--inductor-relu-bug",
        "accuracy",
        env={"FXLENS_BISECT_FRESH_RUNS": "1"},
    )
    assert proc.returncode == 0, proc.stderr
    _assert_relu_lowering(fresh)
    assert {k: fresh["compiler_bisector"][k] for k in BISECTOR_FIELDS} == {
        k: forked["compiler_bisector"][k] for k in BISECTOR_FIELDS
    }
    assert fresh["runs"] == forked["runs"] and fresh["culprit"] == forked["culprit"]


def test_inductor_compile_error_handed_to_compiler_bisector(tmp_path):
    proc, v, _ = _bisect(tmp_path, MULTI, "--inductor-relu-bug", "compile_error")
    assert proc.returncode == 0, proc.stderr
    assert v["failure"]["kind"] == "crash"
    _assert_relu_lowering(v)


def test_a_recorded_graph_that_does_not_fail_again_is_narrowed_by_runs(tmp_path):
    # ground truth: --flaky MARKER puts relu (the inductor bug) only in the run that creates
    # MARKER, the first; every later run has no relu and passes. The first run's record names
    # graph 2, but no later run can confirm it: the handover's answer must not stand
    marker = tmp_path / "failed-once"
    proc, v, _ = _bisect(tmp_path, MULTI, "--inductor-relu-bug", "compile_error", "--flaky", marker)
    assert proc.returncode == 0, proc.stderr
    assert marker.exists()
    assert v["outcome"] == "flaky" and v["culprit"] is None
    assert "confirming run 1's record" in proc.stdout and "narrowing by runs instead" in proc.stdout
