"""fxlens fix's recorder keeps each compiled call's outputs from outside the compiled code: a
module compiled in place (the `model.compile()` fix) compiles the same graphs with the recorder as
without it (torch's own counters)."""

from __future__ import annotations

import torch

from fxlens.fix.child import _record_wrap, _Recorder
from fxlens.fix.usage import Usage


class _Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x).relu()


def _graphs(record: bool, tmp_path) -> tuple[int, int]:
    torch._dynamo.reset()
    net = _Net()
    net._compiled_call_impl = torch.compile(net._call_impl, backend="eager")  # nn.Module.compile()
    recorder = _Recorder(str(tmp_path / "out.pt"))
    if record:
        frame = type("F", (), {"f_code": _graphs.__code__, "f_lineno": 1})()
        wrap = _record_wrap(recorder, Usage())
        import fxlens.fix.child as child

        live, child.live_user_frame = child.live_user_frame, lambda f: f
        try:
            net = wrap(net, net, {}, frame)
        finally:
            child.live_user_frame = live
    before = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    for _ in range(3):  # more calls than the first: a recorder traced into the graph guards on them
        net(torch.randn(2, 4))
    kept = sum(len(v) for v in recorder.outputs.values())
    return torch._dynamo.utils.counters["stats"]["unique_graphs"] - before, kept


def test_an_in_place_compile_compiles_the_same_graphs_with_the_recorder(tmp_path):
    plain, _ = _graphs(False, tmp_path)
    recorded, kept = _graphs(True, tmp_path)
    assert recorded == plain == 1 and kept == 3
