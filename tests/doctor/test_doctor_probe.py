"""The child-side probe's pieces, in process: timing wrapper, target description, shapes."""

import inspect

import torch

from fxlens.doctor.command import doctor_script
from fxlens.probe.hook import ProbeRecord, _describe, _signature, _timed


class Net(torch.nn.Module):
    def forward(self, x):
        return x + 1


def scale(x, k=2):
    return x * k


def test_timed_passes_through_and_records():
    rec = ProbeRecord(0, "scale", "function", "", 0, "", 0, 0, {})
    timed = _timed(scale, rec)
    x = torch.ones(3, requires_grad=True)
    out = timed(x, k=3)
    assert torch.equal(out, x * 3)  # same result, same autograd graph
    timed(torch.ones(5))
    assert rec.calls == 2 and len(rec.times_ms) == 2 and rec.compiles == [0, 0]
    assert rec.signatures == {"[(3,)]": 1, "[(5,)]": 1} and rec.shape_changes == 1
    assert rec.grad_calls == 1
    assert timed.__name__ == "scale"


def test_describe_targets():
    name, kind, file, line, wrapped = _describe(Net())
    assert (name, kind, wrapped) == ("Net.forward", "module", None)
    assert (file, line) == (__file__, inspect.getsourcelines(Net.forward)[1])
    m = Net()
    assert _describe(m._call_impl)[:2] == ("Net.forward", "method")  # what module.compile() passes
    assert _describe(scale)[:2] == ("scale", "function")


def test_signature_sees_nested_tensors():
    assert _signature((torch.ones(2, 3), [torch.ones(4)], 7), {"y": torch.ones(1)}) == "[(2, 3), (4,), (1,)]"


def test_demo_entry_points():
    params = inspect.signature(doctor_script).parameters
    assert list(params)[:2] == ["script", "args"] and "backend" in params and "rounds" in params


def test_old_optimize_api_is_timed_once_and_torch_compile_not_twice(monkeypatch):
    # bug reports for torch 2.0 call torch._dynamo.optimize(backend)(fn); torch.compile calls it
    # too, and that inner call must not become a second timed record
    from fxlens.capture.compile_hook import observe
    from fxlens.probe import hook as probe

    monkeypatch.setattr(torch, "compile", torch.compile)  # both restored after the test
    monkeypatch.setattr(torch._dynamo, "optimize", torch._dynamo.optimize)
    monkeypatch.setattr(probe, "_STATE", probe._State())
    observe("doctor", wrap=probe.wrap)
    torch._dynamo.reset()
    try:
        old = torch._dynamo.optimize("eager", nopython=True)(scale)
        line_old = inspect.currentframe().f_lineno - 1
        new = torch.compile(Net(), backend="eager")
        line_new = inspect.currentframe().f_lineno - 1
        assert torch.equal(old(torch.ones(3)), torch.ones(3) * 2)
        assert torch.equal(new(torch.ones(3)), torch.ones(3) + 1)
    finally:
        torch._dynamo.reset()
    recs = probe._STATE.records
    assert [(r.name, r.at_line, r.options["backend"], r.calls) for r in recs] == [
        ("scale", line_old, "eager", 1),
        ("Net.forward", line_new, "eager", 1),
    ]
    assert recs[0].options["fullgraph"] is True and recs[0].at_file == __file__


def test_retiming_uses_the_most_frequent_shapes_not_the_last_call(monkeypatch):
    # a DataLoader loop: six full batches, then a short last one; the steady state must be timed on
    # a full batch (the script's typical call), and say so
    from fxlens.capture.compile_hook import observe
    from fxlens.probe import hook as probe

    monkeypatch.setattr(torch, "compile", torch.compile)
    monkeypatch.setattr(torch._dynamo, "optimize", torch._dynamo.optimize)
    monkeypatch.setattr(probe, "_STATE", probe._State(mode="compiled", budget_s=0.05))
    observe("doctor", wrap=probe.wrap)
    torch._dynamo.reset()
    seen = []

    @torch._dynamo.disable  # noted outside the graph: a traced append would guard on len(seen)
    def note(x):
        seen.append(tuple(x.shape))

    def step(x):
        note(x)
        return x.relu()

    try:
        fn = torch.compile(step, backend="eager")
        for n in [64] * 6 + [5]:
            fn(torch.randn(n, 8))
        seen.clear()
        probe.measure_all()
    finally:
        torch._dynamo.reset()
    (rec,) = probe._STATE.records
    assert rec.signatures == {"[(64, 8)]": 6, "[(5, 8)]": 1}
    assert rec.bench["timed_on"] == {"shapes": "[(64, 8)]", "calls": 6}
    assert seen and set(seen) == {(64, 8)}, "the re-timing called with the last (short) batch"
