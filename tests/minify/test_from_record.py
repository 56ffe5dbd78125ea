"""The capture run's own record stands in for compiling the failing graph alone (issue 24: the
confirm step compiled the whole graph again, twice), only where that record settles it; and when
reduction then finds nothing smaller, the graph is compiled alone after all."""

import json
from dataclasses import dataclass

import pytest

from fxlens.minify import pipeline
from fxlens.minify.repro_writer import ReproSpec


class FakePool:
    timeout = 120.0

    def set_backend(self, spec):
        self.backend = spec

    def close(self):
        self.closed = True


@dataclass
class FakeCand:
    num_calls: int


def _run(tmp_path, check="auto"):
    run = pipeline.MinifyRun("s.py", [], None, check, None, None, False, None, 0.0, tmp_path, FakePool())
    run.timings["capture"] = 30.0
    return run


def _captured(tmp_path, backend="inductor", **failed):
    cap = tmp_path / "capture"
    cap.mkdir(exist_ok=True)
    (cap / "graph_0.json").write_text(json.dumps({"backend": backend, "config": [], "inputs": []}))
    rec = {"graph": 0, "step": "failed", "phase": "compile", "kind": "crash"}
    rec["signature"] = "InductorError: CppCompileError: C++ compile error"
    return pipeline._Captured(cap, 1, "", [0], {**rec, **failed}, [0], [])


@pytest.fixture
def no_torch(monkeypatch):
    """load_candidate and base_spec without torch: the graph is not what is tested here."""
    monkeypatch.setattr(
        pipeline, "load_candidate", lambda cap, k: ({"backend": "inductor"}, None, FakeCand(114))
    )
    base = ReproSpec(backend="inductor", check="crash")
    monkeypatch.setattr(pipeline, "base_spec", lambda *a: base)


def test_a_compile_crash_of_a_named_compiler_is_taken_from_the_record(tmp_path, no_torch):
    run = _run(tmp_path)
    found = pipeline._from_record(run, _captured(tmp_path))
    assert found is not None and found.deferred and not found.flaky
    assert found.sig == "InductorError: CppCompileError: C++ compile error"
    assert found.spec.signature == found.sig and found.spec.values_path is None
    assert not found.spec.backward and found.spec.check == "crash"
    assert run.pool.timeout == 120.0  # 2 x the 30 s capture run is less than the default


@pytest.mark.parametrize(
    "why, failed, backend, check",
    [
        ("a failure while running: inputs may matter", {"phase": "run"}, "inductor", "auto"),
        ("an accuracy failure", {"kind": "accuracy"}, "inductor", "auto"),
        ("the script's own callable may be flaky", {}, "/tmp/s.py:my_backend", "auto"),
        ("a module's callable, the same", {}, "pkg.mod:backend", "auto"),
        ("--check accuracy asked for", {}, "inductor", "accuracy"),
        ("a broken candidate's signature", {"signature": "candidate error: x"}, "inductor", "auto"),
    ],
)
def test_the_graph_is_compiled_alone_otherwise(tmp_path, no_torch, why, failed, backend, check):
    assert pipeline._from_record(_run(tmp_path, check), _captured(tmp_path, backend, **failed)) is None, why


def _confirmed(deferred, sig="S", n=114):
    spec = ReproSpec(backend="inductor", check="crash", signature=sig)
    return pipeline._Confirmed(0, {}, FakeCand(n), spec, sig, False, deferred=deferred)


def _reduced(final_n):
    return pipeline._Reduced(FakeCand(114), None, FakeCand(final_n), None, 114, None, 0, None)


def test_nothing_smaller_failing_asks_the_isolated_graph_and_reduces_again(tmp_path, monkeypatch):
    calls = []
    isolated = _confirmed(False, sig="T")  # alone, the graph fails otherwise than in the script

    def confirm_phase(run, captured, trust_record=True):
        calls.append(("confirm", trust_record))
        return _confirmed(True) if trust_record else isolated

    def reduce_phase(run, confirmed):
        calls.append(("reduce", confirmed.sig))
        return _reduced(114 if confirmed.deferred else 1)

    monkeypatch.setattr(pipeline, "_capture_phase", lambda run: None)
    monkeypatch.setattr(pipeline, "_confirm_phase", confirm_phase)
    monkeypatch.setattr(pipeline, "_reduce_phase", reduce_phase)
    monkeypatch.setattr(pipeline, "_finish", lambda run, cap, conf, red: (conf, red))
    conf, red = pipeline.run_pipeline(_run(tmp_path))
    assert calls == [("confirm", True), ("reduce", "S"), ("confirm", False), ("reduce", "T")]
    assert conf is isolated and red.final.num_calls == 1


def test_a_reduction_that_shrank_needs_no_isolated_run(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(pipeline, "_capture_phase", lambda run: None)
    monkeypatch.setattr(
        pipeline,
        "_confirm_phase",
        lambda run, cap, trust_record=True: calls.append(trust_record) or _confirmed(True),
    )
    monkeypatch.setattr(pipeline, "_reduce_phase", lambda run, conf: _reduced(1))
    monkeypatch.setattr(pipeline, "_finish", lambda run, cap, conf, red: conf)
    assert pipeline.run_pipeline(_run(tmp_path)).deferred and calls == [True]


def test_a_phase_run_twice_adds_up(tmp_path, monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(pipeline.time, "perf_counter", lambda: clock[0])
    run = _run(tmp_path)
    run.timings.clear()
    run.t0 = 100.0
    clock[0] = 105.0
    run.lap("confirm")
    clock[0] = 109.0
    run.lap("reduce")
    clock[0] = 111.0
    run.lap("confirm")  # the isolated confirm after a reduction that found nothing smaller
    assert run.timings == {"confirm": 7.0, "reduce": 4.0}
