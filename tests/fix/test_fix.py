"""`fxlens fix` end to end on real runs (backend eager: the fixes tried do not need inductor).

Ground truth is torch's own trace of each re-run: a fix "helps" only when the re-run's session
shows fewer recompiles / breaks than the first run's, with the same compiled outputs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fix_helpers import SCRIPTS
from fix_helpers import run_fix as _fix
from schema_check import validate

from fxlens.fix import measure
from fxlens.fix.findings import gather
from fxlens.trace.session import Session


@pytest.fixture(scope="module")
def kw_item(build_once):
    """One `fxlens fix` of a script with a recompile (keyword input at two lengths) and a graph
    break (`.item()`): 1 first run, 2 re-runs, 1 run of both together."""

    def build(d: Path) -> None:
        (d / "s").mkdir()
        proc, _ = _fix(d, "kw_and_item.py")
        (d / "stdout").write_text(proc.stdout)
        (d / "stderr").write_text(proc.stderr)
        (d / "rc").write_text(str(proc.returncode))

    d = build_once("fix-kw-item", build)
    return d, json.loads((d / "fix.json").read_text())


def test_each_fix_is_tried_alone_and_measured_against_torchs_trace(kw_item):
    d, result = kw_item
    assert (d / "rc").read_text() == "0", (d / "stderr").read_text()
    validate("fix", result)
    by_kind = {f["kind"]: f for f in result["fixes"]}
    md = by_kind["mark_dynamic"]
    assert md["params"]["arg"] == "input_ids" and md["params"]["dim"] == 1 and md["how"] == "hook"
    assert md["applied"] and md["verdict"] == "helps" and md["outputs_equal"] is True
    cfg = by_kind["config"]
    assert cfg["params"]["name"] == "capture_scalar_outputs" and cfg["verdict"] == "helps"
    # the numbers are torch's own, read again from each re-run's session
    for f in (md, cfg):
        again, _ = measure.measures(Session.open(f["run"]))
        assert {k: again[k] for k in ("graphs", "breaks", "recompiles")} == {
            k: f["after"][k] for k in ("graphs", "breaks", "recompiles")
        }
    assert md["before"]["recompiles"] >= 1 and md["after"]["recompiles"] < md["before"]["recompiles"]
    assert cfg["before"]["breaks"] >= 1 and cfg["after"]["breaks"] == 0
    # the code fix is a patch against the user's file, never run
    code = by_kind["keep_tensor"]
    assert code["verdict"] == "not tried" and code["how"] == "code" and code["after"] is None
    assert "-        scale = h.abs().max().item()" in code["patch"]
    assert "+        scale = h.abs().max()" in code["patch"]
    # the two that helped, together once
    assert result["together"]["verdict"] == "helps" and len(result["together"]["fixes"]) == 2
    assert result["together"]["after"]["recompiles"] == 0 and result["together"]["after"]["breaks"] == 0


def test_progress_names_each_run_and_results_are_session_events(kw_item):
    d, result = kw_item
    err = (d / "stderr").read_text()
    assert "[1/?] the first run" in err and "[2/4] mark_dynamic input_ids 1" in err
    assert "config capture_scalar_outputs=True" in err and "[4/4] the fixes that helped, together" in err
    events = [e for e in Session.open(d / "s").events if e.get("event") == "fix"]
    assert len(events) == len(result["fixes"])  # appended as measured: Ctrl-C keeps them
    out = (d / "stdout").read_text()
    assert "[helps] `torch._dynamo.mark_dynamic(input_ids, 1)`" in out and "patch (not tried):" in out


def test_a_fix_that_changes_results_is_never_called_helps():
    # fewer recompiles, but the compiled outputs differ: the verdict says so, never "helps"
    before = {"graphs": 2, "breaks": 0, "recompiles": 1, "compile_s": 1.0}
    after = {"graphs": 1, "breaks": 0, "recompiles": 0, "compile_s": 0.5}
    assert measure.verdict(["recompiles"], before, after, True)[0] == "helps"
    assert measure.verdict(["recompiles"], before, after, False)[0] == "changes results"
    # fewer breaks because nothing compiles any more is not a fix (an in-place compile inside DDP
    # is bypassed by DDP's call: 3 breaks -> 0, and 0 graphs)
    nothing = {"graphs": 0, "breaks": 0, "recompiles": 0, "compile_s": 0.0}
    assert measure.verdict(["breaks"], {**before, "breaks": 3}, nothing, True)[0] == "not applied"
    # a fix the re-run could not apply is never "no effect" nor "helps"
    assert (
        measure.verdict(["recompiles"], before, before, None, not_applied="not applied: x")[0]
        == "not applied"
    )
    torch = pytest.importorskip("torch")
    a = {"outputs": {"f.py:3:0": [[torch.ones(3)]]}, "calls": {"f.py:3:0": 1}}
    b = {"outputs": {"f.py:3:0": [[torch.ones(3) * (1 + 1e-6)]]}, "calls": {"f.py:3:0": 1}}
    c = {"outputs": {"f.py:3:0": [[torch.ones(3) * 1.01]]}, "calls": {"f.py:3:0": 1}}
    assert measure.compare_outputs(a, b)[0] is True  # within float32's tolerance
    assert measure.compare_outputs(a, c)[0] is False
    # the size of a difference, its call and output, and whether it is drift (within 10x)
    equal, diff, n = measure.first_difference(a, c)
    assert equal is False and n == 1 and diff["call"] == 1 and diff["output"] == 1
    assert abs(diff["max_abs"] - 0.01) < 1e-6 and diff["within_loose"] is False
    drift = {"outputs": {"f.py:3:0": [[torch.ones(3) * (1 + 3e-4)]]}, "calls": {"f.py:3:0": 1}}
    equal, diff, _ = measure.first_difference(a, drift)
    assert equal is False and diff["within_loose"] is True
    # integers compare exactly
    i = {"outputs": {"f.py:3:0": [[torch.tensor([1, 2, 3])]]}, "calls": {"f.py:3:0": 1}}
    j = {"outputs": {"f.py:3:0": [[torch.tensor([1, 2, 4])]]}, "calls": {"f.py:3:0": 1}}
    assert measure.first_difference(i, j)[1]["what"] == "1 of 3 values differ"


def test_helps_only_when_no_other_count_got_worse():
    # regional compilation of blocks of four widths: compile seconds fell, recompiles rose and the
    # recompile limit was hit; that is a trade-off, with both sides said, never "helps"
    before = {"graphs": 1, "breaks": 0, "recompiles": 2, "compile_s": 9.0, "limit_hits": 0}
    after = {"graphs": 4, "breaks": 0, "recompiles": 8, "compile_s": 3.0, "limit_hits": 1}
    got, why = measure.verdict(["compile_s"], before, after, True, load=1.0)
    assert got == "trade-off" and "compile 9.00 s -> 3.00 s" in why and "recompiles 2 -> 8" in why
    assert "limit_hits 0 -> 1" in why
    # the target improved and nothing else moved: helps
    assert measure.verdict(["compile_s"], before, {**before, "compile_s": 3.0}, True, load=1.0)[0] == "helps"
    # at a load of 4 per core one run may be 1.8 times slower than another: 9 s -> 6 s is noise there
    assert (
        measure.verdict(["compile_s"], before, {**before, "compile_s": 6.0}, True, load=4.0)[0] == "no effect"
    )
    # the target did not move and another count got worse: hurts
    assert measure.verdict(["recompiles"], before, {**before, "breaks": 2}, True)[0] == "hurts"


def test_findings_carry_their_fixes_as_data_and_code_fixes_get_patches(tmp_path):
    # a report as `fxlens run` writes it: the LR cause's action becomes a patch at the optimizer line
    script = SCRIPTS / "lr_scheduler.py"
    report = {
        "recompile_causes": [
            {
                "function": "step",
                "file": str(script),
                "line": 12,
                "message": "module attribute `self.param_groups[0]['lr']` ...",
                "actions": [{"kind": "tensor_lr", "params": {"lr": "0.01"}}],
            }
        ],
        "graph_breaks": [],
        "recompile_limit_hits": [{"function": "f", "file": "m.py", "line": 3, "limit": 8}],
    }
    (lr, limit) = gather(report, str(script))
    assert lr["how"] == "code" and "torch.tensor(0.01)" in lr["fix"]
    assert "+opt = torch.optim.AdamW(model.parameters(), lr=torch.tensor(0.01))" in lr["patch"]
    assert limit["how"] == "config" and limit["action"]["params"] == {
        "name": "recompile_limit",
        "value": 64,
        "target": "limit_hits",
    }


def test_the_report_of_a_fix_session_has_a_fixes_section(kw_item):
    from fxlens.report.build import build_report
    from fxlens.report.formats import render_html, render_markdown
    from fxlens.report.text import render_text

    d, result = kw_item
    report = build_report(Session.open(d / "s"))
    md = render_markdown(report, env={})
    assert "### Fixes tried (fxlens fix)" in md and "**helps**" in md and "**not tried**" in md
    assert "The fixes that helped, together: helps" in md and "```diff" in md
    assert "Fixes tried (fxlens fix)" in render_html(report, env={})
    text = render_text(report)
    assert (
        "Fixes tried (fxlens fix):" in text and "[helps] `torch._dynamo.mark_dynamic(input_ids, 1)`" in text
    )
    # the recompile cause's own fix line carries what fxlens fix measured of it
    (cause,) = report["recompile_causes"]
    md = next(f for f in result["fixes"] if f["kind"] == "mark_dynamic")
    assert cause["measured"] == [{"kind": "mark_dynamic", "verdict": "helps", "why": md["why"]}]
    assert f"    measured by fxlens fix: [helps] {md['why']}" in text


@pytest.mark.parametrize(
    "argv, message",
    [
        (["fix", "missing.py"], "fxlens fix: error: missing.py: no such script"),
        (
            ["fix", "--try", "bogus", str(SCRIPTS / "kw_and_item.py")],
            "expected regional:CLASS, nested_region:CLASS, dynamic or config:",
        ),
    ],
)
def test_bad_input_is_one_line_before_any_run(tmp_path, argv, message):
    proc = subprocess.run(
        [sys.executable, "-m", "fxlens.cli", *argv], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / ".fxlens").exists()  # refused before a session was made


# ---- real models and the must-show cases (slow: minutes on a 2-core machine) --------------------


def _by_kind(result: dict) -> dict:
    return {f["kind"]: f for f in result["fixes"]}


@pytest.mark.slow
def test_generate_on_a_compiled_module_compiles_nothing_until_compiled_in_place(tmp_path):
    pytest.importorskip("transformers")
    proc, result = _fix(tmp_path, "hf_bart_generate.py")
    assert proc.returncode == 0, proc.stderr[-2000:]
    validate("fix", result)
    f = _by_kind(result)["compile_in_place"]
    assert f["before"]["graphs"] == 0 and f["after"]["graphs"] > 0  # torch's trace: now it compiles
    assert f["verdict"] == "helps" and f["outputs_equal"] is True
    assert "the same fix run eagerly" in f["outputs"]


@pytest.mark.slow
def test_dataloader_mark_dynamic_helps_and_dynamic_true_has_no_effect(tmp_path):
    proc, result = _fix(tmp_path, "dataloader.py", "--try", "dynamic")
    assert proc.returncode == 0, proc.stderr[-2000:]
    validate("fix", result)
    by = _by_kind(result)
    assert by["mark_dynamic"]["verdict"] == "helps" and by["mark_dynamic"]["params"]["arg"] == "args[0]"
    # torch 2.13 keeps a compiled nn.Sequential's batch size static even with dynamic=True
    assert by["dynamic"]["verdict"] == "no effect" and by["dynamic"]["applied"]
    assert by["dynamic"]["after"]["recompiles"] == by["dynamic"]["before"]["recompiles"]
    assert by["drop_last"]["verdict"] == "not tried" and "drop_last=True" in by["drop_last"]["patch"]


@pytest.mark.slow
def test_regional_compilation_of_twelve_layers_compiles_one_block(tmp_path):
    proc, result = _fix(tmp_path, "twelve_layers.py", "--try", "regional:Block")
    assert proc.returncode == 0, proc.stderr[-2000:]
    f = _by_kind(result)["regional"]
    assert f["applied"] and f["outputs_equal"] is True
    # one graph serves the 12 instances; compile seconds are load-dependent, the graph count is not
    assert f["after"]["graphs"] == 1 and f["after"]["recompiles"] == 0
    assert f["verdict"] in ("helps", "no effect")


@pytest.mark.slow
def test_a_failing_fix_is_reported_as_hurting_with_torchs_error(tmp_path):
    pytest.importorskip("transformers")
    proc, result = _fix(tmp_path, "hf_llama_lengths.py")
    assert proc.returncode == 0, proc.stderr[-2000:]
    f = _by_kind(result)["mark_dynamic"]
    # the model specialises the sequence length: torch refuses the dynamic mark
    assert f["verdict"] == "hurts" and "ConstraintViolationError" in f["why"]


@pytest.mark.slow
def test_compiling_inside_ddp_removes_the_wrappers_breaks(tmp_path):
    proc, result = _fix(tmp_path, "ddp_wrapped.py")
    assert proc.returncode == 0, proc.stderr[-2000:]
    f = _by_kind(result)["compile_inside_ddp"]
    assert f["before"]["breaks"] > 0 and f["after"]["breaks"] == 0 and f["after"]["graphs"] >= 1
    assert f["verdict"] == "helps" and f["outputs_equal"] is True


@pytest.mark.slow
def test_a_run_session_is_the_first_run_and_the_eager_run_the_reference(tmp_path):
    script = SCRIPTS / "kw_and_item.py"
    subprocess.run(
        [sys.executable, "-m", "fxlens.cli", "run", "--quiet", "--session", str(tmp_path / "s"), str(script)],
        cwd=tmp_path,
        check=True,
        capture_output=True,
        timeout=300,
    )
    proc, result = _fix(tmp_path, "kw_and_item.py")  # --session s: the run above
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "the first run" not in proc.stderr and "reference outputs" in proc.stderr
    md = _by_kind(result)["mark_dynamic"]
    assert md["verdict"] == "helps" and md["outputs_equal"] is True
    assert "the script run eagerly" in md["outputs"]


@pytest.mark.slow
def test_sigterm_keeps_the_fixes_measured_so_far(tmp_path):
    import signal
    import time

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fxlens.cli",
            "fix",
            "--session",
            str(tmp_path / "s"),
            str(SCRIPTS / "kw_and_item.py"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    events = tmp_path / "s" / "events.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not (events.exists() and '"event": "fix"' in events.read_text()):
        time.sleep(1)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 143 and "fxlens: terminated" in err
    assert "interrupted; the fixes measured so far" in out and "[helps]" in out
    assert sum(e.get("event") == "fix" for e in Session.open(tmp_path / "s").events) >= 1


@pytest.mark.slow  # two inductor compiles of 12 layers, and the same by hand
def test_nested_region_traces_the_block_once_as_by_hand(tmp_path):
    proc, result = _fix(tmp_path, "twelve_layers.py", "--try", "nested_region:Block")
    assert proc.returncode == 0, proc.stderr[-2000:]
    f = _by_kind(result)["nested_region"]
    assert f["applied"] and f["outputs_equal"] is True
    # by hand: the same script with the class marked, in a fresh interpreter; torch's own trace of it
    # holds one invoke_subgraph call per instance in the whole model's graph
    src = (SCRIPTS / "twelve_layers.py").read_text()
    marked = src.replace(
        "model = torch.compile(",
        "Block.forward = torch.compiler.nested_compile_region(Block.forward)\nmodel = torch.compile(",
    )
    assert marked != src
    (tmp_path / "by_hand.py").write_text(marked)
    trace = tmp_path / "trace"
    subprocess.run(
        [sys.executable, "by_hand.py"],
        cwd=tmp_path,
        env={**os.environ, "TORCH_TRACE": str(trace)},
        check=True,
    )
    by_hand = json.loads(
        subprocess.run(
            [sys.executable, "-m", "fxlens.cli", "report", str(trace), "--json", "-"],
            capture_output=True, text=True, check=True,
        ).stdout
    )  # fmt: skip
    assert f["after"]["graphs"] == len(by_hand["graphs"]) and f["after"]["recompiles"] == len(
        by_hand["recompiles"]
    )
    codes = "".join(p.read_text(errors="replace") for p in trace.glob("*.log"))
    assert codes.count("invoke_subgraph") > 0


def _by_hand(tmp_path, name: str, edit: str) -> dict:
    """The planted loop script with EDIT before its torch.compile call, run in a fresh interpreter
    under TORCH_TRACE: graphs, recompiles (fxlens report of torch's trace) and compile seconds
    (torch's compilation_metrics, read from the log)."""
    src = (LOOP_SCRIPT).read_text()
    edited = src.replace("model = torch.compile(", f"{edit}\nmodel = torch.compile(")
    assert edited != src
    (tmp_path / f"{name}.py").write_text(edited)
    trace = tmp_path / f"trace-{name}"
    subprocess.run([sys.executable, f"{name}.py"], cwd=tmp_path, env={**os.environ, "TORCH_TRACE": str(trace)},
                   check=True, timeout=600)  # fmt: skip
    report = json.loads(
        subprocess.run([sys.executable, "-m", "fxlens.cli", "report", str(trace), "--json", "-"],
                       capture_output=True, text=True, check=True).stdout
    )  # fmt: skip
    secs = 0.0
    for log in trace.glob("*.log"):
        for line in open(log, encoding="utf-8"):
            if '"compilation_metrics"' in line:
                m = json.loads(line[line.index("] ") + 2 :])["compilation_metrics"]
                secs += m["entire_frame_compile_time_s"] or 0.0
    return {"graphs": len(report["graphs"]), "recompiles": len(report["recompiles"]), "compile_s": secs,
            "log": "".join(p.read_text(errors="replace") for p in trace.glob("*.log"))}  # fmt: skip


LOOP_SCRIPT = Path(__file__).parents[1] / "capture" / "scripts" / "unrolled_loop.py"


@pytest.mark.slow  # the 300-iteration loop compiled 3 times by fix and 3 times by hand (~90 s)
def test_an_unrolled_loops_fixes_are_tried_and_agree_with_the_same_edit_by_hand(tmp_path):
    proc, result = _fix(tmp_path, LOOP_SCRIPT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    validate("fix", result)
    fixes = _by_kind(result)
    nested, regional = fixes["nested_region"], fixes["regional"]
    for f in (nested, regional):
        assert f["params"]["block"] == "Linear" and f["applied"] and f["outputs_equal"] is True
        assert "unrolling" not in f["finding"] and "calls `layer` (Linear) 300 times" in f["finding"]
    base = _by_hand(tmp_path, "base", "")
    marked = _by_hand(
        tmp_path, "nested", "torch.nn.Linear.forward = torch.compiler.nested_compile_region(torch.nn.Linear.forward)"
    )
    each = _by_hand(
        tmp_path,
        "regional",
        "_stack = Stack()\nfor _b in _stack.modules():\n    if isinstance(_b, torch.nn.Linear):\n"
        "        _b.forward = torch.compile(_b.forward, backend='eager')\nStack = lambda: _stack\n"
        "torch.compile = lambda m, **kw: m",
    )
    # the counts fix measured are those of the same edit by hand (torch's trace)
    assert (nested["before"]["graphs"], nested["before"]["recompiles"]) == (base["graphs"], base["recompiles"])
    assert (nested["after"]["graphs"], nested["after"]["recompiles"]) == (marked["graphs"], marked["recompiles"])
    assert (regional["after"]["graphs"], regional["after"]["recompiles"]) == (each["graphs"], each["recompiles"])
    assert "invoke_subgraph" in marked["log"]
    # regional compilation traces one Linear instead of 300: compile seconds fall by far more than
    # any load moves them, in fxlens's re-run and by hand alike
    assert regional["after"]["compile_s"] < regional["before"]["compile_s"] / 3
    assert each["compile_s"] < base["compile_s"] / 3
    assert "->" in proc.stdout and f"compile s {regional['before']['compile_s']:.2f} -> " in proc.stdout
