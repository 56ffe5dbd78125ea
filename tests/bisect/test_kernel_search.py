"""Kernel and fusion-decision search over fake runs (the real backend is exercised in
test_fxlens_inject.py; FXLENS_INJECT can't make a fault that only fusion triggers)."""

from types import SimpleNamespace

from fxlens.bisect import kernels as bisect_kernels
from fxlens.bisect.kernels import find_fusion, find_kernel


class FakeRecord:
    def __init__(self, kind, data):
        self.kind, self.data = kind, data

    def payload_json(self):
        return self.data


class FakeOutcome:
    def __init__(self, records, error=""):
        self.records, self.error = records, error

    def session(self):
        return SimpleNamespace(records=lambda cid: self.records if cid == "2/0" else [], logs=[])


class FakeRuns:
    """`run(..., env=...)` fails when the culprit kernel is not on fallback / the limit reaches it."""

    def __init__(self, bad_kernel=None, bad_decision=None, kind="accuracy"):
        self.bad_kernel, self.bad_decision, self.envs, self.kind = bad_kernel, bad_decision, [], kind

    def run(self, label, stage, good="", graphs="all", env=None):
        env = env or {}
        self.envs.append(env)
        fails = False
        if "FXLENS_KERNEL_FALLBACK" in env:
            fails = self.bad_kernel not in env["FXLENS_KERNEL_FALLBACK"].split(",")
        if "FXLENS_FUSION_LIMIT" in env:
            fails = int(env["FXLENS_FUSION_LIMIT"]) >= self.bad_decision
        return SimpleNamespace(kind=self.kind if fails else None)


def _kernels(n):
    return [
        FakeRecord(
            "artifact:fxlens_kernel",
            {
                "name": f"fxk_forward_{i}_op{i}",
                "graph": "forward",
                "ops": [f"aten.op{i}.default"],
                "source_path": f"/k{i}.py",
            },
        )
        for i in range(n)
    ]


def test_kernel_binary_search_names_the_kernel_and_its_ops():
    for bad in range(6):
        runs = FakeRuns(bad_kernel=f"fxk_forward_{bad}_op{bad}")
        k = find_kernel(runs, FakeOutcome(_kernels(6)), "fxlens", "fxlens_nofusion", 2, "2/0", "accuracy")
        assert k["name"] == f"fxk_forward_{bad}_op{bad}" and k["ops"] == [f"aten.op{bad}.default"]
        assert k["source_path"] == f"/k{bad}.py" and len(runs.envs) <= 4


def test_kernel_named_by_the_error_costs_one_run(monkeypatch):
    monkeypatch.setattr(bisect_kernels, "kernel_checks", lambda out, names: [])
    runs = FakeRuns(bad_kernel="fxk_forward_4_op4", kind="crash")
    out = FakeOutcome(
        _kernels(6), error="RuntimeError: boom launching kernel fxk_forward_4_op4 (op aten.op4.default"
    )
    k = find_kernel(runs, out, "fxlens", "fxlens_nofusion", 2, "2/0", "crash")
    assert k["name"] == "fxk_forward_4_op4" and len(runs.envs) == 1


def test_crash_before_kernels_were_logged_reports_the_named_kernel():
    out = FakeOutcome(
        [],
        error="RuntimeError: fxlens: injected compile_error compiling kernel fxk_inference_0_erf (op aten.erf.default, FX node erf)",
    )
    runs = FakeRuns()
    k = find_kernel(runs, out, "fxlens", "fxlens_nofusion", 2, "2/0", "crash")
    assert k["name"] == "fxk_inference_0_erf" and k["ops"] == ["aten.erf.default"] and runs.envs == []


def test_fusion_decision_search():
    decisions = [
        {"index": i, "fused": True, "a": f"k{i}", "b": f"n{i}", "reason": "same loop"} for i in range(11)
    ]
    out = FakeOutcome([FakeRecord("artifact:fxlens_fusion", {"graph": "forward", "decisions": decisions})])
    for bad in (1, 6, 11):
        runs = FakeRuns(bad_decision=bad)
        f = find_fusion(runs, out, "fxlens", "fxlens_nofusion", 2, "2/0", "accuracy")
        assert f["decision"] == bad and f["of"] == 11 and f["a"] == f"k{bad - 1}"
        assert "fuse" in f["detail"] and len(runs.envs) <= 4
    assert find_fusion(FakeRuns(), FakeOutcome([]), "fxlens", "fxlens_nofusion", 2, "2/0", "accuracy") is None
