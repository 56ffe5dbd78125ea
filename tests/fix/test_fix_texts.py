"""The fix texts issue 29 found wrong, corrected in the cause rules, and checked against torch.

The pure tests read guard lines as torch 2.13 writes them; the slow ones run the fix (fxlens's
re-run with that fix applied, or the patched script) and check torch does what the text says.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fxlens.report.causefix import shorten
from fxlens.report.rootcause import root_causes
from fxlens.trace.records import Recompile

SCRIPTS = Path(__file__).parent / "scripts"


def _rc(cid, *guards, function="forward", co_name="forward", file="m.py"):
    return Recompile(cid, None, function, file, 3, guards, co_name)


def test_the_lr_of_a_compiled_optimizer_step_is_a_tensor_lr_not_library_code():
    g = "0/0: self.param_groups[0]['lr'] == 0.01  # for group in self.param_groups:  # optim/adam.py:229 in step"
    (c,) = root_causes([_rc("0/1", g, function="step", co_name="step")])
    assert "lr=torch.tensor(0.01)" in c.fix and "does not control" not in c.fix
    assert [a["kind"] for a in c.actions] == ["tensor_lr"]


def test_a_cross_attention_cache_that_changed_length_is_a_prompt_length_not_a_decode_step():
    enc = "0/0: tensor 'kwargs['past_key_values'].cross_attention_cache.layers[0].keys' size mismatch at index 2. expected 8, actual 12"
    (c,) = root_causes([_rc("0/1", enc)])
    assert "grows by one token" not in c.fix and "prompt length" in c.fix and "8 -> 12" in c.fix
    step = "0/0: tensor 'kwargs['past_key_values'].layers[0].keys' size mismatch at index 2. expected 8, actual 9"
    (d,) = root_causes([_rc("0/1", step)])
    assert "grows by one token at every decoding step" in d.fix


def test_a_type_guard_is_named_and_never_cut_inside_a_quote():
    g = "0/0: expected type of 'L['kwargs']['past_key_values']' to be a tensor type, ' but found <class 'NoneType'>"
    (c,) = root_causes([_rc("0/1", g)])
    assert c.kind == "type" and c.message == "type of `past_key_values` changed"
    cut = shorten("guard `expected type of 'L['kwargs']['past_key_values']' to be a tensor type`", 40)
    assert cut.count("'") % 2 == 0 and cut.endswith("…")


def test_settings_the_user_sets_are_not_code_they_do_not_control():
    lib = "/venv/lib/python3.11/site-packages/transformers/models/bert/modeling_bert.py"
    g = f"0/0: self.config.problem_type == 'regression'  # if self.config.problem_type == 'regression':  # {lib}:1500 in forward"
    (c,) = root_causes([_rc("0/1", g)])
    if "library" not in c.fix and "setting" not in c.fix:
        pytest.skip("this machine's venv path is not recognised as a library path")
    assert "a setting your script passes or sets" in c.fix and "does not control" not in c.fix
    u = f"0/0: use_cache == True  # if use_cache:  # {lib}:900 in forward"
    (d,) = root_causes([_rc("0/1", u)])
    assert "a setting your script passes or sets" in d.fix


def test_the_resumed_code_note_needs_a_graph_break():
    # the same size change under two names in one frame without a resume function: no graph break
    same = (
        "0/0: tensor 'x' size mismatch at index 0. expected 8, actual 4",
        "0/0: tensor 'y' size mismatch at index 0. expected 8, actual 4",
    )
    (c,) = root_causes([_rc("0/1", *same)])
    assert "graph break" not in c.message
    resumed = [
        _rc("0/1", same[0]),
        _rc(
            "1/1",
            "1/0: tensor 'h' size mismatch at index 0. expected 8, actual 4",
            co_name="torch_dynamo_resume_in_forward_at_5",
        ),
    ]
    (d,) = root_causes(resumed)
    assert "in the code resumed after a graph break" in d.message


def test_mark_dynamic_only_on_the_compiled_calls_own_arguments():
    held = "0/0: tensor 'input_ids' size mismatch at index 1. expected 8, actual 12"
    inner = "1/0: tensor 'hidden_states' size mismatch at index 1. expected 16, actual 24"
    # 1/* is an inner frame torch compiled after a graph break (not entered by the user's call)
    causes = root_causes(
        [_rc("0/1", held), _rc("1/1", inner, function="layer", co_name="layer")], entry_ids={"0/0", "0/1"}
    )
    by = {c.subject: c for c in causes}
    assert "mark_dynamic(input_ids, 1)" in by["input `input_ids`, dim 1"].fix
    h = by["input `hidden_states`, dim 1"]
    assert "mark_dynamic(hidden_states" not in h.fix and [a["kind"] for a in h.actions] == ["dynamic"]


def test_drop_last_only_for_a_short_last_batch():
    short = "0/0: tensor 'x' size mismatch at index 0. expected 8, actual 4"
    (c,) = root_causes([_rc("0/1", short)])
    assert "drop_last=True" in c.fix
    grow = "0/0: tensor 'x' size mismatch at index 0. expected 4, actual 8"
    (d,) = root_causes([_rc("0/1", grow)])
    assert "drop_last" not in d.fix
    # generate(): cache_position's dim 0 goes from the prompt length to 1 (decode): no drop_last
    decode = "0/0: tensor 'cache_position' size mismatch at index 0. expected 8, actual 1"
    (e,) = root_causes([_rc("0/1", decode)])
    assert "drop_last" not in e.fix and e.kind == "size_one"


# ---- the fixes run: torch does what the text says ---------------------------------------------


def _size_one_script(tmp_path: Path) -> Path:
    script = tmp_path / "decode.py"
    script.write_text(
        "import torch\n"
        "w = torch.randn(100, 4)\n"
        "@torch.compile(backend='eager')\n"
        "def step(input_ids):\n"
        "    return (w[input_ids] * 2).sum(-1)\n"
        "for n in (8, 1, 1, 5, 1):  # prefill, then one-token decode steps, a second prompt\n"
        "    step(torch.arange(n).unsqueeze(0))\n"
    )
    return script


@pytest.mark.slow
def test_automatic_dynamic_cannot_help_a_size_one_dim_and_mark_unbacked_does(tmp_path):
    from fxlens.fix.runs import one_run
    from fxlens.report.fixes import action

    script = _size_one_script(tmp_path)
    base = one_run(str(script), [], tmp_path / "base", [], backend=None, timeout=None, speed=0.0)
    assert base["measures"]["recompiles"] == 2  # 8 (static), 1 (specialised), 5 (dynamic)
    marked = one_run(
        str(script),
        [],
        tmp_path / "md",
        [action("mark_dynamic", arg="input_ids", dim=1)],
        backend=None,
        timeout=None,
        speed=0.0,
    )
    # what the old text advised: the dim is dynamic from the start, yet size 1 still recompiles
    assert marked["measures"]["recompiles"] == 1
    unbacked = one_run(
        str(script),
        [],
        tmp_path / "ub",
        [action("mark_unbacked", arg="input_ids", dim=1)],
        backend=None,
        timeout=None,
        speed=0.0,
    )
    assert unbacked["measures"]["recompiles"] == 0 and unbacked["applied"]


@pytest.mark.slow
def test_the_tensor_lr_patch_removes_the_recompiles(tmp_path):
    from fxlens.fix.patches import tensor_lr
    from fxlens.fix.runs import one_run

    script = tmp_path / "lr.py"
    shutil.copy(SCRIPTS / "lr_scheduler.py", script)
    base = one_run(str(script), [], tmp_path / "base", [], backend=None, timeout=None, speed=0.0)
    assert base["measures"]["recompiles"] >= 1
    patch, line, lr = tensor_lr(str(script))
    assert lr == "0.01" and line == 7
    script.write_text(script.read_text().replace("lr=0.01", "lr=torch.tensor(0.01)"))
    after = one_run(str(script), [], tmp_path / "after", [], backend=None, timeout=None, speed=0.0)
    assert after["measures"]["recompiles"] == 0


@pytest.mark.slow
def test_the_inner_frame_after_a_graph_break_gets_no_mark_dynamic(tmp_path):
    # Outer.forward calls Inner.forward(hidden_states), which breaks: torch compiles Inner.forward
    # as its own frame; the user holds `x`, never `hidden_states`
    from fxlens.fix.runs import one_run
    from fxlens.report.build import build_report
    from fxlens.trace.session import Session

    script = tmp_path / "nest.py"
    script.write_text(
        "import torch\n"
        "class Inner(torch.nn.Module):\n"
        "    def forward(self, hidden_states):\n"
        "        h = hidden_states * 3\n"
        "        torch._dynamo.graph_break()\n"
        "        return h.relu()\n"
        "class Outer(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.inner = Inner()\n"
        "    def forward(self, x):\n"
        "        return self.inner(x * 2) + 1\n"
        "m = torch.compile(Outer(), backend='eager')\n"
        "for n in (8, 12):\n"
        "    m(torch.randn(n, 4))\n"
    )
    run = one_run(str(script), [], tmp_path / "base", [], backend=None, timeout=None, speed=0.0)
    report = build_report(Session.open(run["dir"]))
    causes = report["recompile_causes"]
    assert any("mark_dynamic(x, 0)" in c["fix"] for c in causes)
    assert not any("mark_dynamic(hidden_states" in c["fix"] or "mark_dynamic(h," in c["fix"] for c in causes)
    marked = [a["params"]["arg"] for c in causes for a in c["actions"] if a["kind"] == "mark_dynamic"]
    assert marked == ["x"]
    # the "(reaches ... after a graph break)" note is printed here, where there is one
    assert report["graph_breaks"] and any("resumed after a graph break" in c["message"] for c in causes)
