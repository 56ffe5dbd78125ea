"""The child-side probe's pieces, in process: timing wrapper, target description, shapes."""

import inspect

import torch

from fxlens.doctor.command import doctor_script, render_doctor, render_text
from fxlens.doctor.probe import ProbeRecord, _describe, _signature, _timed


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
    assert render_doctor is render_text


def test_old_optimize_api_is_timed_once_and_torch_compile_not_twice(monkeypatch):
    # bug reports for torch 2.0 call torch._dynamo.optimize(backend)(fn); torch.compile calls it
    # too, and that inner call must not become a second timed record
    from fxlens.capture.compile_hook import observe
    from fxlens.doctor import probe

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
