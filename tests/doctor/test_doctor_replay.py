"""doctor's replay runs each call in the state the script called it in, and what the replay itself
compiles is never one of the script's findings (fxlens.probe.callstate, fxlens.probe.replaytrace).

Ground truth for the script-level checks: torch's own `TORCH_LOGS=recompiles` on a plain `python`
run of the same script (no fxlens in the process).
"""

import json
import os
import re
import subprocess
import sys

import pytest
import torch
from doctor_helpers import SCRIPTS, fxlens

from fxlens.probe.callstate import capture, restored, unrestorable
from fxlens.probe.replaytrace import mark, replay_compiles, split


def _torch_recompiles(script, *args) -> int:
    """Recompiles torch itself logs for a plain run of SCRIPT (no fxlens in the process)."""
    env = {**os.environ, "TORCH_LOGS": "recompiles"}
    env.pop("TORCH_TRACE", None)
    proc = subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, env=env, timeout=900
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return len(re.findall(r"Recompiling function", proc.stderr))


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = torch.nn.Linear(4, 4)
        self.drop = torch.nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(self.inner(x))


def test_restored_puts_the_call_state_back_and_the_later_one_after():
    model = Block().train()
    with torch.autocast("cpu", dtype=torch.bfloat16), torch.device("cpu"):
        state = capture(model)
    torch.manual_seed(5)
    rng_at_call = torch.get_rng_state()
    state.rng = rng_at_call
    model.eval()
    torch.manual_seed(9)
    later_rng = torch.get_rng_state()
    assert unrestorable(state) is None
    with torch.no_grad():
        with restored(state):
            assert model.training and model.inner.training and model.drop.training
            assert torch.is_grad_enabled() and torch.is_autocast_enabled("cpu")
            assert torch.get_autocast_dtype("cpu") == torch.bfloat16
            assert torch.equal(torch.get_rng_state(), rng_at_call)
            torch.rand(3)  # the replay draws random numbers...
        # ...and the script's later state is back, every submodule included
        assert not model.training and not model.inner.training and not model.drop.training
        assert not torch.is_grad_enabled() and not torch.is_autocast_enabled("cpu")
        assert torch.equal(torch.get_rng_state(), later_rng)


def test_a_function_sees_the_modules_it_names():
    model = Block().train()

    def step(x):
        return model(x)

    state = capture(step)
    assert {id(m) for m, _ in state.training} == {id(m) for m in model.modules()}


def test_a_call_under_a_mode_doctor_cannot_recreate_is_not_replayed():
    from torch.overrides import TorchFunctionMode

    class Counting(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    with Counting():
        state = capture(Block())
    assert "Counting" in unrestorable(state)


def test_split_moves_the_replay_records_out_of_the_script_trace(tmp_path, monkeypatch):
    trace = tmp_path / "trace"
    trace.mkdir()
    log = trace / "dedicated_log_torch_trace_x.log"
    head = (
        'V1205 00:58:17.723000 11 torch/_logging/structured.py:28] {"str": ["/a.py", 0]}\n'
        'V1205 00:58:17.724000 11 torch/_dynamo/convert_frame.py:1] {"dynamo_start": {"stack": []}, '
        '"frame_id": 0, "frame_compile_id": 0, "attempt": 0}\n'
    )
    tail = (
        'V1205 00:58:19.000000 11 torch/_dynamo/convert_frame.py:1] {"dynamo_start": {"stack": []}, '
        '"frame_id": 0, "frame_compile_id": 1, "attempt": 0}\n'
    )
    log.write_text(head + tail)
    got = split(tmp_path, {"log": str(log), "offset": len(head.encode())})
    assert log.read_text() == head
    moved = (tmp_path / "doctor-replay" / log.name).read_text()
    assert (
        moved.startswith('V1205 00:58:17.723000 11 torch/_logging/structured.py:28] {"str"') and tail in moved
    )
    assert got["bytes"] == len(tail) and replay_compiles(got["trace"]) == ["0/1"]
    assert split(tmp_path, None) == {"trace": None, "bytes": 0}
    monkeypatch.delenv("TORCH_TRACE", raising=False)
    assert mark() is None  # no structured trace: nothing to split


def test_train_then_eval_replays_in_train_mode_and_compiles_nothing(monkeypatch):
    # the training calls are the typical ones; the script ends in eval mode under no_grad: the
    # replay must run the training call as it ran (train mode, grad on) and so compile nothing
    from fxlens.capture.compile_hook import observe
    from fxlens.probe import hook as probe

    monkeypatch.setattr(torch, "compile", torch.compile)
    monkeypatch.setattr(torch._dynamo, "optimize", torch._dynamo.optimize)
    monkeypatch.setattr(probe, "_STATE", probe._State(mode="compiled", budget_s=0.05))
    observe("doctor", wrap=probe.wrap)
    torch._dynamo.reset()
    model = Block()
    try:
        cmodel = torch.compile(model, backend="eager")
        model.train()
        for _ in range(4):
            cmodel(torch.randn(8, 4)).sum().backward()
        model.eval()
        with torch.no_grad():
            cmodel(torch.randn(2, 4))
        compiles = probe._STATE.compiles
        probe.measure_all()
    finally:
        torch._dynamo.reset()
    (rec,) = probe._STATE.records
    assert rec.bench["replayed_in"]["grad"] is True
    assert rec.bench["replayed_in"]["training"] == rec.bench["replayed_in"]["modules"] == 3
    assert probe._STATE.replay_compiles == 0 and probe._STATE.compiles == compiles
    assert not model.training and not model.drop.training, "the script's eval mode was not put back"


def test_replay_compiles_are_doctors_not_the_scripts(doctored, tmp_path):
    # the script changes a global its compiled function reads after its last call: the replay
    # recompiles (doctor's doing); torch logs no recompile for the script run plainly
    script = SCRIPTS / "global_changes.py"
    proc, result = doctored("global_changes", "--budget", "1")
    assert proc.returncode == 0, proc.stderr
    assert _torch_recompiles(script) == 0
    assert result["recompiles"] == 0
    assert not [f for f in result["findings"] if f["kind"] in ("recompile", "graph_break", "recompile_limit")]
    assert result["replay"]["compiles"] >= 1 and result["replay"]["compile_ids"]
    assert "re-timing compiled" in proc.stdout
    # the replay's own records stay readable, as a trace of their own
    rep = fxlens("report", "--json", "-", result["replay"]["trace"])
    assert rep.returncode == 0, rep.stderr
    assert len(json.loads(rep.stdout)["recompiles"]) >= 1


@pytest.mark.slow
@pytest.mark.parametrize("model", ["vit", "wav2vec2", "llama"])
def test_hf_model_eval_after_training_no_doctor_recompile(model, tmp_path):
    script = SCRIPTS / "hf_train_eval.py"
    truth = _torch_recompiles(script, model)
    out = tmp_path / "d.json"
    proc = fxlens("doctor", "--budget", "5", "--json", out, script, model, env_root=tmp_path, timeout=1800)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    assert result["recompiles"] == truth, (result["recompiles"], truth, result["replay"])
    assert result["replay"]["compiles"] == 0, result["replay"]
    (row,) = result["functions"]
    assert row["timing"]["method"] == "interleaved"
    # the typical call is a training call: replayed in train mode with gradients, as it ran
    replayed = row["timing"]["replayed_in"]
    assert replayed["grad"] and replayed["training"] == replayed["modules"] > 1, replayed
    # every break, recompile and given-up frame is placed at a line of the script (a library's
    # frame is named inside the message, never as the place to change)
    for f in result["findings"]:
        if f["kind"] in ("graph_break", "recompile", "eager_frame", "recompile_limit"):
            assert f["file"] == str(script), f


@pytest.mark.slow
def test_each_break_gets_its_measured_share(tmp_path, monkeypatch):
    # ground truth by hand: the eager function between the two graphs (`heavy`, 300 ops) timed on
    # its own, against the break that leaves nothing eager behind (`graph_break()`); one thread
    # each, so a shared machine's load stalls no intra-op thread
    from torch.utils.benchmark import Timer

    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    out = tmp_path / "d.json"
    proc = fxlens("doctor", "--budget", "5", "--json", out, SCRIPTS / "break_costs.py", env_root=tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    breaks = {f["line"]: f for f in result["findings"] if f["kind"] == "graph_break"}
    assert set(breaks) == {23, 25}
    share = {
        line: float(re.search(r"\((\d+)%, profiled\)", f["message"]).group(1)) for line, f in breaks.items()
    }
    assert share[25] > share[23] and share[25] + share[23] <= 100, share
    seg = result["functions"][0]["timing"]["segments"]
    heavy_ms = seg["frames"]["1/0"]["eager_ms"]
    ns = {}
    exec(compile((SCRIPTS / "break_costs.py").read_text().split("def step")[0], "bc", "exec"), ns)
    timer = Timer("heavy(y)", globals={"heavy": ns["heavy"], "y": torch.randn(4096)}, num_threads=1)
    by_hand = [timer.blocked_autorange(min_run_time=0.2).median * 1000 for _ in range(5)]
    # the profiled segment, less the profiler's own cost per op, is heavy() itself: within a
    # factor of 4 of timing it alone (load moves both; never a different order of magnitude)
    assert min(by_hand) / 4 < heavy_ms < max(by_hand) * 4, (heavy_ms, by_hand)
