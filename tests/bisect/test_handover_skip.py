"""The CompilerBisector handover skips subsystems that cannot apply (issue 24: a `cudagraphs` step
ran the whole script on a machine with no CUDA), and every run says where its time went."""

import os

import pytest

torch = pytest.importorskip("torch")

from fxlens.bisect import inductor  # noqa: E402
from fxlens.bisect.runs import Outcome  # noqa: E402
from fxlens.bisect.verdict import render_text  # noqa: E402


class FakeBisector:
    def __init__(self, subsystem):
        self.subsystem = subsystem

    def get_backend(self):
        return "inductor"

    def get_subsystem(self):
        return self.subsystem

    def get_run_state(self, backend, subsystem):
        return "test_disable"


class CountingRuns:
    def __init__(self):
        self.labels = []

    def run(self, label, **kw):
        self.labels.append(label)
        return Outcome(1, label, None, 0, 0.0, None)


@pytest.mark.skipif(torch.cuda.is_available(), reason="the skip is for machines without CUDA")
def test_cudagraphs_is_not_run_without_cuda(monkeypatch):
    monkeypatch.setattr(inductor, "SKIPPED", [])
    spec = {"good": "aot_eager", "graph": 0, "kind": "crash"}
    runs = CountingRuns()
    # ground truth: this machine has no CUDA device, so cudagraphs cannot touch the graph
    assert not torch.cuda.is_available()
    fn = inductor._step(FakeBisector("cudagraphs"), runs, spec, {})
    assert fn() is False and runs.labels == []  # "still fails", without a run
    assert inductor.SKIPPED == ["cudagraphs"]
    fn = inductor._step(FakeBisector("lowerings"), runs, spec, {})
    assert fn() is True and runs.labels == ["inductor lowerings test_disable"]  # others still run


def test_run_times_split_and_add_up():
    out = Outcome(1, "as-asked", None, 1, 78.2, "crash", compile_s=54.7, check_s=0.3)
    # the parent launched it at t=100; the runner started at 100.4 and torch was imported at 109.8
    out.launched_at = 100.0
    out.process = {"runner_at": 100.4, "torch_at": 109.8, "forked": False}
    t = out.times()
    assert (t["startup_s"], t["import_s"], t["run_s"]) == pytest.approx((0.4, 9.4, 13.4))
    assert sum(t[k] for k in ("startup_s", "import_s", "compile_s", "check_s", "run_s")) == pytest.approx(
        78.2
    )
    assert t["compile_s"] + t["check_s"] + t["script_and_start_s"] == pytest.approx(78.2)  # as before
    assert out.time_line() == "78.2s: start 0.4, import 9.4, compile 54.7, checks 0.3, run 13.4"
    text = render_text({"summary": "s", "runs": 1, "seconds": 80.0, "run_times": [t], "session": "x"})
    assert "runs     1 in 80.0s: start 0.4s, import 9.4s, compile 54.7s, checks 0.3s, run 13.4s" in text
    assert "run  1 as-asked" in text and "78.2s: start 0.4s, import 9.4s" in text


def test_forked_run_imports_nothing_but_its_first_waits_for_the_warm_process():
    out = Outcome(2, "eager", None, 0, 12.0, None, compile_s=1.0, check_s=0.5)
    out.launched_at, out.waited_s = 100.0, 8.0  # the warm process was still importing torch
    out.process = {"runner_at": 108.1, "torch_at": 108.1, "forked": True}
    t = out.times()
    assert t["forked"] and (t["startup_s"], t["import_s"]) == pytest.approx((0.1, 8.0))
    assert t["run_s"] == pytest.approx(12.0 - 0.1 - 8.0 - 1.5)


def test_a_run_that_compiled_nothing_has_no_start_split():
    t = Outcome(3, "no torch.compile", None, 0, 5.0, None).times()
    assert t["startup_s"] is None and t["import_s"] is None and t["run_s"] == 5.0
    assert "start" not in Outcome(3, "x", None, 0, 5.0, None).time_line()


def test_older_verdicts_run_times_still_render():
    old = {
        "n": 1,
        "label": "as-asked",
        "seconds": 78.2,
        "compile_s": 54.7,
        "check_s": 0.3,
        "script_and_start_s": 23.2,
    }
    text = render_text({"summary": "s", "runs": 1, "seconds": 80.0, "run_times": [old], "session": "x"})
    assert "compile 54.7s, checks 0.3s, script and start 23.2s (run 1 as-asked: 78.2s)" in text


class ScriptedRuns:
    """Runs whose outcomes are given in order (kind None: passes; or (kind, error)), recording each label."""

    def __init__(self, kinds):
        self.kinds, self.labels = list(kinds), []

    def run(self, label, **kw):
        self.labels.append(label)
        kind = self.kinds.pop(0)
        kind, error = kind if isinstance(kind, tuple) else (kind, "")
        return Outcome(len(self.labels), label, None, 0, 0.0, kind, error=error)


SPEC = {"good": "aot_eager", "graph": 2, "kind": "crash", "confirmed": False}


def test_graph_from_the_first_runs_record_is_confirmed_by_a_failing_step():
    runs = ScriptedRuns(["crash", None])
    fn = inductor._step(FakeBisector("joint_graph_passes"), runs, SPEC, {})
    assert fn() is False  # the step fails as run 1 did: graph 2 fails alone, no run spent on it
    assert fn() is True and runs.labels == ["inductor joint_graph_passes test_disable"] * 2
    fn.confirm()
    assert len(runs.labels) == 2


def test_a_pass_before_any_confirmation_confirms_first():
    runs = ScriptedRuns([None, "crash"])
    fn = inductor._step(FakeBisector("lowerings"), runs, SPEC, {})
    assert fn() is True
    assert runs.labels == [
        "inductor lowerings test_disable",
        "inductor on graph 2 (confirming run 1's record)",
    ]


def test_a_record_that_does_not_fail_alone_is_given_back():
    # ground truth: a flaky failure, or one that needs the other graphs: graph 2 alone passes
    runs = ScriptedRuns([None, None])
    fn = inductor._step(FakeBisector("lowerings"), runs, SPEC, {})
    with pytest.raises(inductor.Unconfirmed):
        fn()


def test_a_different_failure_does_not_confirm(monkeypatch):
    monkeypatch.setattr(inductor, "OTHER", [])
    runs = ScriptedRuns(["accuracy", "crash"])
    fn = inductor._step(FakeBisector("lowerings"), runs, SPEC, {})
    # another kind of failure is not the script's: counted as not failing, which is a verdict
    # only on a graph known to fail alone, so the graph gets its own run
    assert fn() is True
    assert runs.labels[-1] == "inductor on graph 2 (confirming run 1's record)"


def test_a_confirmed_graph_needs_no_run():
    runs = ScriptedRuns([None])
    fn = inductor._step(FakeBisector("lowerings"), runs, {**SPEC, "confirmed": True}, {})
    assert fn() is True and len(runs.labels) == 1


# run 1's own error, as the wrapper recorded it (a real CppCompileError line: path and kernel name)
CPP = "CppCompileError: C++ compile error at /tmp/torchinductor_root/ab/cabc123.cpp: cpp_fused_relu_3"


def test_a_crash_with_another_message_does_not_confirm(monkeypatch):
    monkeypatch.setattr(inductor, "OTHER", [])
    spec = {**SPEC, "error": CPP}
    # ground truth: with a pass disabled the graph fails, but with another exception than run 1's
    other = ("crash", "LoweringException: AssertionError: size mismatch 16 != 8")
    runs = ScriptedRuns([other, ("crash", CPP)])
    fn = inductor._step(FakeBisector("lowerings"), runs, spec, {})
    # not the script's failure: "does not fail" for the bisector (issue 34), and graph 2 is not
    # confirmed by it, so it gets its own run first, which fails as run 1 did
    assert fn() is True
    assert runs.labels[-1] == "inductor on graph 2 (confirming run 1's record)"
    assert [o["run"] for o in inductor.OTHER] == [1] and "size mismatch" in inductor.OTHER[0]["error"]


def _load_truncated_kernel(tmp_path) -> str:
    """The error a step gets when it loads a cached kernel `.so` cut short (an earlier step killed
    while writing it), as Python's extension loader (inductor's, for C++ kernels) raises it."""
    import importlib.machinery
    import importlib.util

    so = tmp_path / "cutshort.so"
    so.write_bytes(b"")
    loader = importlib.machinery.ExtensionFileLoader("cutshort", str(so))
    try:
        importlib.util.module_from_spec(importlib.util.spec_from_file_location("cutshort", so, loader=loader))
    except ImportError as e:
        return f"ImportError: {e}"
    raise AssertionError("a truncated .so loaded")


def test_a_step_that_fails_otherwise_is_not_counted_as_failing(monkeypatch, tmp_path):
    """Each step compiles into a clean cache of its own, and a step that fails otherwise than the
    script (a truncated cached kernel) is "does not fail": torch's CompilerBisector, counting it
    bad, narrowed to a wrong lowering."""
    monkeypatch.setattr(inductor, "OTHER", [])
    spec = {**SPEC, "error": CPP, "confirmed": True}
    caches = []

    class CacheRuns(ScriptedRuns):
        def run(self, label, env=None, **kw):
            caches.append(env["TORCHINDUCTOR_CACHE_DIR"])
            assert os.path.isdir(caches[-1]) and not os.listdir(caches[-1])  # empty, new
            return super().run(label, **kw)

    short = _load_truncated_kernel(tmp_path)
    assert "file too short" in short
    runs = CacheRuns([("crash", short), ("crash", CPP), None])
    fn = inductor._step(
        FakeBisector("lowerings"), runs, spec, {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "cache")}
    )
    assert [fn(), fn(), fn()] == [True, False, True]
    assert len(set(caches)) == 3 and not any(os.path.exists(c) for c in caches)  # removed after
    assert [o["run"] for o in inductor.OTHER] == [1]
    text = render_text(
        {
            "summary": "s",
            "runs": 3,
            "session": "x",
            "compiler_bisector": {"backend": "inductor", "runs": 3, "other_failures": inductor.OTHER},
        }
    )
    assert "1 step(s) failed otherwise than the script" in text and "file too short" in text


def test_the_same_crash_in_other_temp_files_and_kernels_confirms():
    spec = {**SPEC, "error": CPP}
    same = ("crash", CPP.replace("ab/cabc123", "zz/cq9").replace("relu_3", "relu_add_7"))
    runs = ScriptedRuns([same, None])
    fn = inductor._step(FakeBisector("lowerings"), runs, spec, {})
    assert fn() is False and fn() is True
    assert len(runs.labels) == 2  # confirmed by the first step: no confirming run


def test_a_confirming_run_that_fails_otherwise_gives_the_graph_back_with_its_error():
    spec = {**SPEC, "error": CPP}
    runs = ScriptedRuns([None, ("crash", "RuntimeError: out of memory")])
    fn = inductor._step(FakeBisector("lowerings"), runs, spec, {})
    with pytest.raises(inductor.Unconfirmed, match="graph 2 alone: crash: RuntimeError: out of memory"):
        fn()


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_a_truncated_cached_kernel_does_not_mislead_the_handover(bisect, tmp_path):
    """~11 min on a loaded 2-core box (each step compiles its C++ afresh). Ground truth: torch's own
    `python -m torch._inductor.compiler_bisector run` on the script with truncation off and a clean
    cache names the lowering fxlens must name with truncation on."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).parent / "scripts" / "truncated_kernel.py"
    env = {**os.environ, "TRUNCATE": "0", "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "torch-cache")}
    truth = subprocess.run(
        [sys.executable, "-m", "torch._inductor.compiler_bisector", "run", sys.executable, str(script)],
        capture_output=True,
        text=True,
        env=env,
        timeout=3000,
    )
    line = next(ln for ln in truth.stdout.splitlines() if ln.startswith("Bisection complete"))
    proc, v = bisect(script, timeout=3000)
    assert proc.returncode == 0, proc.stderr
    cb = v["compiler_bisector"]
    assert f"subsystem='{cb['subsystem']}'" in line and f"bisect_number={cb['bisect_number']}" in line, line
    assert (cb["subsystem"], cb["debug_info"]) == ("lowerings", "relu")
