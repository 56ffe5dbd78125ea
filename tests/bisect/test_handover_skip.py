"""The CompilerBisector handover skips subsystems that cannot apply (issue 24: a `cudagraphs` step
ran the whole script on a machine with no CUDA), and every run says where its time went."""

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
    spec = {"good": "aot_eager", "graph": 0}
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
    t = out.times()
    assert t["compile_s"] + t["check_s"] + t["script_and_start_s"] == pytest.approx(78.2)
    assert out.time_line() == "78.2s: compile 54.7, checks 0.3, script and start 23.2"
    text = render_text({"summary": "s", "runs": 1, "seconds": 80.0, "run_times": [t], "session": "x"})
    assert "runs     1 in 80.0s: compile 54.7s, checks 0.3s, script and start 23.2s (run 1 as-asked: 78.2s)" in text
