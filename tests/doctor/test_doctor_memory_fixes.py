"""One fix per memory cause doctor names, tried on its planted script and measured in bytes.

Each planted script (tests/doctor/scripts/mem_*.py) runs in a fresh process before and after the
fix doctor names for it (tests/doctor/memdriver.py: a config action applied the way `fxlens fix`
applies it, `dynamic` as fix's hook applies it), measured the way doctor's probe measures; the
bytes are checked against a count made another way (saved_tensors_hooks, the tensors' own nbytes).

| cause | planted | fix tried | bytes before -> after |
|---|---|---|---|
| activations saved for backward | mem_saved.py | functorch.activation_memory_budget = 0.5 | 4.0 -> 2.0 MiB saved |
| held: one copy per cache entry | mem_storm.py | dynamic=True; recompile_limit = 2 | 24 -> 4; 24 -> 8 MiB held |
| held: a frozen constant | mem_frozen.py | inductor.freezing = False | 17.3 -> 0 MiB held |
"""

import pytest
import torch
from test_doctor_memory import _drive, _line_of, _rec

from fxlens.doctor.memcauses import _dynamo_graphs, _held_cause, function_memory
from fxlens.trace.session import Session

TABLE = torch.randn(256, 4096).nbytes  # mem_storm.py's constant, one copy


@pytest.mark.slow
def test_activation_budget_halves_what_the_compiled_partition_saves():
    before = _drive("mem_saved.py", "step", "backward")
    after = _drive("mem_saved.py", "step", "backward", "config:functorch.activation_memory_budget=0.5")
    for run in (before, after):  # doctor's count is autograd's own, by hand
        assert run["memory"]["compiled"]["saved"]["bytes"] == run["by_hand_saved"]["compiled"]
    b, a = before["by_hand_saved"]["compiled"], after["by_hand_saved"]["compiled"]
    assert b > 2 * (1 << 20) + 1e5  # more than eager's 2 MiB: the planted cause
    assert a <= b - (1 << 20)  # the partitioner recomputes about half: 4.0 -> 2.0 MiB
    assert after["by_hand_saved"]["eager"] == before["by_hand_saved"]["eager"]  # eager untouched


@pytest.mark.slow
@pytest.mark.parametrize(
    ("fix", "entries"),
    [("dynamic", 1), ("config:recompile_limit=2", 2)],
    ids=["dynamic", "recompile_limit"],
)
def test_fewer_cache_entries_hold_fewer_copies(fix, entries):
    before = _drive("mem_storm.py", "f")["memory"]["held"]
    after = _drive("mem_storm.py", "f", fix)["memory"]["held"]
    assert [e["bytes"] for e in before["entries"]] == [TABLE] * 6
    assert [e["bytes"] for e in after["entries"]] == [TABLE] * entries
    assert after["bytes"] == entries * TABLE


@pytest.mark.slow
def test_freezing_off_holds_no_frozen_constant(tmp_path):
    before = _drive("mem_frozen.py", "fast", "no_grad", trace=tmp_path)["memory"]
    # the script sets freezing itself: the fix must still win (fix re-sets it as each compile starts)
    after = _drive("mem_frozen.py", "fast", "no_grad", "config:inductor.freezing=false")["memory"]
    folded = (torch.ones(1024, 1024) * 2).nbytes  # `self.w * 2`, folded into a constant
    assert before["held"]["bytes"] >= folded
    assert after["held"]["bytes"] == 0
    # the cause is named at the line of the folded constant, not at a prepacked copy without one
    rec = _rec(before, "mem_frozen.py", "Scaled.forward")
    f = function_memory(rec, [], _dynamo_graphs(Session.open(tmp_path)))
    cause = _held_cause(f, next(p for p in f["parts"] if p["cause"] == "held_by_compiled_code"), rec)
    assert cause["line"] == _line_of("mem_frozen.py", "x @ (self.w * 2)")
