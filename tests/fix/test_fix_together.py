"""Two fixes real models asked for, each checked against torch itself:

- inputs that change size together (a graph's node features and edge index): torch's guard names
  only the first, its automatic dynamic shapes makes both dynamic (`create_symbol`), and the fix
  marks both; marking the named one alone leaves the recompile (checked here in torch);
- `torch.compile(nn.LSTM(...))`: Dynamo gives up on the module (no graph) with the break "Attempted
  to wrap RNN, GRU, or LSTM", and torch's own switch `allow_rnn=True` compiles it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from fix_helpers import run_fix

from fxlens.report.fixes import break_actions_of, describe
from fxlens.report.together import dims_made_dynamic, marks_together
from fxlens.trace.reader import Record
from fxlens.trace.records import RecompileCause

CASES = Path(__file__).resolve().parents[2] / "bench" / "fix_cases"


def _symbol(source: str) -> Record:
    # the `create_symbol` record as torch 2.13 logs it at the recompile of the message-passing layer
    return Record(
        "create_symbol",
        {"create_symbol": {"symbol": "s0", "val": "14", "source": source}},
        None,
        None,
        Path("t"),
        0,
    )


def _layer_recompiles(*marks: tuple[str, int]) -> int:
    """Recompiles of a message-passing layer on graphs of three node counts, marking MARKS first."""
    torch._dynamo.reset()
    lin = torch.nn.Linear(8, 8)

    def layer(x, edges):
        return torch.zeros_like(x).index_add(0, edges[1], lin(x)[edges[0]])

    f = torch.compile(layer, backend="eager")
    frames = torch._dynamo.utils.counters["frames"]["total"]
    for n in (10, 14, 20):
        args = {"x": torch.randn(n, 8), "edges": torch.randint(0, n, (2, 3 * n))}
        for name, dim in marks:
            torch._dynamo.mark_dynamic(args[name], dim)
        f(**args)
    return torch._dynamo.utils.counters["frames"]["total"] - frames - 1


def test_inputs_that_change_size_together_are_marked_together_as_torch_needs():
    cause = RecompileCause(
        "forward",
        "gnn.py",
        13,
        "size",
        "input `x`, dim 0",
        ("10", "14"),
        1,
        "m",
        "f",
        ("0/1", "1/1"),
        actions=(
            {
                "kind": "mark_dynamic",
                "params": {"arg": "x", "dim": 0, "function": "forward", "file": "gnn.py"},
            },
        ),
    )
    # 1/1: a frame resumed after a graph break, whose argument `h` is no input of the script's call
    records = {
        "0/1": [_symbol("L['x'].size()[0]"), _symbol("L['edges'].size()[1]"), _symbol("L['x'].size()[0]")],
        "1/1": [_symbol("L['h'].size()[1]")],
    }
    got = marks_together(cause, lambda cid: records.get(cid, []))
    (act,) = got.actions
    assert act["kind"] == "mark_dynamic_together" and (act["params"]["args"], act["params"]["dims"]) == (
        ["x", "edges"],
        [0, 1],
    )
    assert "mark_dynamic(edges, 1)" in got.fix and "`edges` dim 1" in describe(act)
    # torch: the guard-named mark alone leaves a recompile (on edges), both marks leave none
    assert _layer_recompiles(("x", 0)) >= 1
    assert _layer_recompiles(("x", 0), ("edges", 1)) == 0


def test_one_input_that_changed_keeps_its_own_mark_and_sources_are_read_as_arguments():
    records = {
        "0/1": [
            _symbol("L['kwargs']['input_ids'].size()[1]"),
            _symbol("L['args'][0].size()[0]"),
            _symbol("L['self'].weight.size()[0]"),
        ]
    }
    assert dims_made_dynamic(lambda cid: records.get(cid, []), ["0/1"]) == [("input_ids", 1), ("args[0]", 0)]
    cause = RecompileCause(
        "f",
        "a.py",
        1,
        "size",
        "s",
        ("8", "6"),
        1,
        "m",
        "f",
        ("0/1",),
        actions=({"kind": "mark_dynamic", "params": {"arg": "x", "dim": 0}},),
    )
    # one input that changed (logged twice, as torch does for a view and its base)
    alone = {
        "0/1": [_symbol("L['x'].size()[0]"), _symbol("L['x']._base.size()[0]"), _symbol("L['x'].size()[0]")]
    }
    assert marks_together(cause, lambda cid: alone.get(cid, [])) is cause


def _lstm_graphs(allow_rnn: bool) -> int:
    torch._dynamo.reset()
    before = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    with torch._dynamo.config.patch(allow_rnn=allow_rnn), torch.no_grad():
        torch.compile(torch.nn.LSTM(4, 8, batch_first=True), backend="eager")(torch.randn(2, 5, 4))
    return torch._dynamo.utils.counters["stats"]["unique_graphs"] - before


def test_an_lstm_break_carries_torchs_allow_rnn_switch_which_compiles_it():
    brk = {
        "reason": "Attempted to wrap RNN, GRU, or LSTM",
        "explanation": "Dynamo does not support RNN, GRU, or LSTM.",
    }
    (act,) = break_actions_of(brk)
    assert act["kind"] == "config" and act["params"]["name"] == "allow_rnn" and act["params"]["value"] is True
    assert _lstm_graphs(False) == 0 and _lstm_graphs(True) >= 1


@pytest.mark.slow
def test_fix_tries_both_marks_on_message_passing_and_allow_rnn_on_an_lstm(tmp_path):
    (tmp_path / "gnn").mkdir()
    (tmp_path / "lstm").mkdir()
    _, gnn = run_fix(tmp_path / "gnn", CASES / "gnn_nodes.py")
    (f,) = gnn["fixes"]
    assert f["kind"] == "mark_dynamic_together" and f["verdict"] == "helps"
    assert (f["after"]["graphs"], f["after"]["recompiles"]) == (1, 0)
    _, lstm = run_fix(tmp_path / "lstm", CASES / "lstm_lengths.py")
    (r,) = [x for x in lstm["fixes"] if x["params"].get("name") == "allow_rnn"]
    assert (
        r["applied"] and (r["before"]["graphs"], r["after"]["graphs"]) == (0, 2) and r["after"]["breaks"] == 0
    )


class _Inner(torch.nn.Module):
    def forward(self, input_ids, attention_mask):
        return (input_ids * attention_mask).float().cumsum(-1)


class _Wrapper(torch.nn.Module):
    """A wrapper that passes everything on through **kwargs, as peft's PeftModel.forward does."""

    def __init__(self):
        super().__init__()
        self.inner = _Inner()

    def forward(self, *args, **kwargs):
        return self.inner(*args, **kwargs)


def test_marks_reach_a_wrapper_that_takes_the_inputs_through_kwargs():
    from fxlens.fix.appliers import APPLIERS, Call, code_of

    torch._dynamo.reset()
    model = _Wrapper()
    code, inner, sig = code_of(model)
    compiled = torch.compile(model, backend="eager")
    call = Call(model, compiled, {"backend": "eager"}, "t.py:1", torch.compile, code, inner, sig)
    params = {"args": ["input_ids", "attention_mask"], "dims": [1, 1], "function": "forward"}
    marks = APPLIERS["mark_dynamic_together"](call, {**params, "code_files": [code.co_filename]})
    assert marks is not None, call.notes
    frames = torch._dynamo.utils.counters["frames"]["total"]
    for n in (8, 12, 16):
        ids = torch.ones(1, n, dtype=torch.long)
        call.compiled(input_ids=ids, attention_mask=torch.ones_like(ids))
    # torch: one compile for every length, both marks made before the first call
    assert marks and torch._dynamo.utils.counters["frames"]["total"] - frames == 1


def test_a_grad_mode_recompile_in_a_librarys_own_code_is_said_as_the_librarys():
    import transformers

    from fxlens.report.gradmode import grad_mode_in_library

    # the compiled frame's file as torch's compilation metrics named it in DETR's run (the loss's
    # generalized_box_iou, called under the matcher's torch.no_grad() and again in the loss)
    lib = str(Path(transformers.__file__).parent / "loss" / "loss_for_object_detection.py")
    cause = RecompileCause(
        "generalized_box_iou", "detr.py", 27, "grad_mode", "grad mode", (), 4, "m", "f", ("20/1",)
    )
    entered = {"0/0", "0/1"}  # the frames the script's call entered (DetrForObjectDetection.forward)
    got = grad_mode_in_library(cause, {"20/1": lib}.get, entered)
    assert (
        "the library itself calls both with and without gradients" in got.fix and "validation" not in got.fix
    )
    # the user's own function keeps the training-vs-validation text
    assert grad_mode_in_library(cause, {"20/1": __file__}.get, entered) is cause
    # so does a library module the script's call entered under its own no_grad (torchvision's
    # ResNet.forward validated under torch.no_grad() in the resnet18 case)
    assert grad_mode_in_library(cause, {"20/1": lib}.get, {"20/1"}) is cause
