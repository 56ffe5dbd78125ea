"""`fxlens doctor` on real scripts: compile helps, compile hurts, recompiles, DDP compiled after wrapping.

Timings are never compared with thresholds, except where the gap is structural (aot_eager runs the
same ops as eager plus Dynamo's per-graph overhead, so with tiny tensors it cannot be faster).
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from doctor_helpers import SCRIPTS, fxlens

from fxlens.report.build import build_report
from fxlens.report.speedups import MIN_PAIRS
from fxlens.report.text import render_text
from fxlens.trace.session import Session

FUNCTION_KEYS = {
    "function",
    "file",
    "line",
    "calls",
    "eager_ms",
    "compiled_ms",
    "compile_s",
    "speedup",
    "break_even_calls",
    "speedup_interval",
    "samples",
}
FINDING_KEYS = {"kind", "message", "file", "line", "fix"}


def _kinds(result, kind):
    return [f for f in result["findings"] if f["kind"] == kind]


def _check_contract(result):
    assert set(result) >= {"functions", "peak_memory", "findings", "summary"}
    for row in result["functions"]:
        assert set(row) >= FUNCTION_KEYS
    for f in result["findings"]:
        assert set(f) >= FINDING_KEYS
    for row in result["functions"]:
        # an interval always brackets its speedup; without one, no verdict
        if row["speedup_interval"] is not None:
            low, high = row["speedup_interval"]
            assert low <= row["speedup"] <= high
        else:
            assert row["verdict"] == "inconclusive"
        assert set(row["samples"]) == {"eager", "compiled"}
    assert set(result["load"]) >= {"average", "cores"} and result["load"]["cores"] >= 1
    assert set(result["peak_memory"]) >= {"eager", "compiled"}
    assert result["peak_memory"]["eager"] > 0 and result["peak_memory"]["compiled"] > 0
    pinned = ("compiled_run_failed", "no_graph_captured", "capture_only_backend", "compiled_after_wrap")
    costs = [f["cost_ms"] for f in result["findings"] if f["kind"] not in pinned]
    assert costs == sorted(costs, reverse=True)  # ranked by estimated cost after the structural ones


def test_compile_helps_fused_pointwise_chain(doctored):
    proc, result = doctored("helps", "--budget", "5")
    assert proc.returncode == 0, proc.stderr[-3000:]
    _check_contract(result)
    (row,) = result["functions"]
    assert (row["function"], row["line"], row["calls"]) == ("chain", 15, 40)
    assert row["compiled_at"] == {"file": str(SCRIPTS / "helps.py"), "line": 21}
    assert row["options"]["backend"] == "inductor"
    # inductor fuses 32 pointwise ops into one loop: faster, or (on a machine too busy to tell)
    # inconclusive, never "slower"; the steady state comes from interleaved pairs, not 40 calls
    assert row["verdict"] in ("faster", "inconclusive")
    assert row["timing"]["method"] == "interleaved" and row["samples"]["eager"] == row["samples"]["compiled"]
    assert row["compile_s"] > 0
    assert row["trace_compile_s"] > 0  # torch's compilation metrics for the same frame
    assert row["speedup"] == round(row["eager_ms"] / row["compiled_ms"], 3)
    assert not _kinds(result, "slower_than_eager")
    assert not _kinds(result, "graph_break")


def test_compile_hurts_tiny_tensors_and_breaks(doctored):
    proc, result = doctored("hurts", "--rounds", "2")
    assert proc.returncode == 0, proc.stderr[-3000:]
    _check_contract(result)
    (row,) = result["functions"]
    assert (row["function"], row["line"], row["calls"]) == ("step", 6, 200)
    assert row["rounds"] == {"eager": 2, "compiled": 2}
    # each compiled round re-timed in its own process; the interval resamples processes, then pairs
    assert row["timing"]["method"] == "interleaved" and row["timing"]["processes"] == 2
    breaks = _kinds(result, "graph_break")
    assert sorted(f["line"] for f in breaks) == [8, 10, 12]
    assert all(f["file"] == str(SCRIPTS / "hurts.py") for f in breaks)
    fixes = {f["line"]: f["fix"] for f in breaks}
    assert "graph_break()" in fixes[8] and "print" in fixes[10]
    # aot_eager with 3 graph breaks on 2-element tensors: slower, or inconclusive, never faster
    assert row["verdict"] in ("slower", "inconclusive")
    if row["verdict"] == "slower":
        (slow,) = _kinds(result, "slower_than_eager")
        assert (slow["line"], slow["function"]) == (16, "step")
        assert "3 graph break(s)" in slow["fix"] and "interleaved pairs" in slow["message"]
        # said up front: aot_eager only captures (no speed to gain), then what it costs
        assert [f["kind"] for f in result["findings"][:2]] == ["capture_only_backend", "slower_than_eager"]
    else:
        # no speed verdict is claimed for a capture-only backend: it says that, not "inconclusive"
        assert result["findings"][0]["kind"] == "capture_only_backend"
        assert not _kinds(result, "slower_than_eager") and not _kinds(result, "timing_inconclusive")
    assert "cannot make the function faster" in result["findings"][0]["message"]
    # aot_eager runs graphs as aten calls: no break is given a share it could not measure
    breaks = _kinds(result, "graph_break")
    assert all("not measured" in f["message"] and "100%" not in f["message"] for f in breaks)
    # the text report names every break line and the fix
    assert "hurts.py:8" in proc.stdout and "hurts.py:12" in proc.stdout
    assert "Findings, by measured or structural impact" in proc.stdout
    assert f"{row['speedup']:.2f}x [" in proc.stdout or "[no interval]" in proc.stdout


def test_doctor_never_changes_numerics(doctored):
    _, result = doctored("hurts", "--rounds", "2")
    plain = subprocess.run(
        [sys.executable, str(SCRIPTS / "hurts.py")], capture_output=True, text=True, timeout=120
    )
    value = plain.stdout.strip().splitlines()[-1]
    for run_dir in ("", "eager-1"):
        log = Session.open(result["session"]).path / run_dir / "output.log"
        assert value in log.read_text().splitlines()


def test_recompiles_every_call_and_needless_dynamic(doctored):
    proc, result = doctored("recompiles")
    assert proc.returncode == 0, proc.stderr[-3000:]
    _check_contract(result)
    rows = {r["function"]: r for r in result["functions"]}
    assert rows["grow"]["calls"] == 8 and rows["grow"]["recompiling_calls"] >= 3
    (static,) = _kinds(result, "static_shapes_changing")
    assert (static["line"], static["function"]) == (17, "grow")
    assert "dynamic=False" in static["fix"]
    (limit,) = _kinds(result, "recompile_limit")
    assert (limit["line"], limit["function"]) == (9, "grow")
    (dyn,) = _kinds(result, "dynamic_unneeded")
    assert (dyn["line"], dyn["function"]) == (18, "fixed")
    assert "dynamic=True" in dyn["fix"]


@pytest.mark.slow  # a 2-process gloo job (torchrun, world size 2, CPU)
def test_ddp_compiled_after_wrapping(doctored):
    proc, result = doctored("ddp_wrong_order", "--nproc", "2", "--timeout", "300")
    assert proc.returncode == 0, proc.stderr[-3000:]
    _check_contract(result)
    (row,) = result["functions"]
    assert row["wrapped_in"] == "DistributedDataParallel" and row["calls"] == 6
    assert row["backward_not_timed"]
    assert result["ranks"] == [0, 1] and "2 ranks" in proc.stdout
    # torch.compile(DDP(model)) on gloo: Dynamo skips DDP's forward, not one graph is captured
    top, wrap = result["findings"][:2]
    assert top["kind"] == "no_graph_captured"
    assert top["message"].startswith("torch.compile captured no graph: everything ran eagerly")
    assert (top["file"], top["line"]) == (str(SCRIPTS / "ddp_wrong_order.py"), 14)
    assert "compile the module, then wrap it" in top["fix"]
    assert wrap["kind"] == "compiled_after_wrap" and (wrap["file"], wrap["line"]) == (top["file"], 14)
    assert "model.compile()" in wrap["fix"] and "inner module" in wrap["fix"]
    assert "DDPOptimizer" not in proc.stdout  # no graph: nothing for DDPOptimizer to split
    # ranks cannot re-time apart: the script's own 5 warm calls a side, too few for a verdict
    assert row["timing"]["method"] == "separate_runs" and row["verdict"] == "inconclusive"
    assert not _kinds(result, "slower_than_eager")
    assert result["exit_codes"] == {"eager": [0], "compiled": [0]}


@pytest.mark.slow  # a 2-process gloo job (torchrun, world size 2, CPU)
def test_ddp_compiled_then_wrapped_captures_graphs(doctored):
    proc, result = doctored("ddp_right_order", "--nproc", "2", "--timeout", "300")
    assert proc.returncode == 0, proc.stderr[-3000:]
    _check_contract(result)
    (row,) = result["functions"]
    assert (row["function"], row["wrapped_in"], row["calls"]) == ("Sequential.forward", None, 6)
    assert not _kinds(result, "no_graph_captured") and not _kinds(result, "compiled_after_wrap")
    # the compiled module inside DDP runs no collective of its own, and the script destroyed its
    # process group: rank 0 re-times it interleaved, so the row has an interval like a 1-process run
    assert row["timing"]["method"] == "interleaved", row["timing"]
    assert row["samples"]["eager"] >= MIN_PAIRS and row["speedup_interval"] is not None
    session = Session.open(result["session"])
    assert build_report(session, with_guards=False)["graphs"]


@pytest.mark.slow  # every compile form; the default run keeps helps/hurts/recompiles
def test_every_way_to_compile_is_timed(doctored):
    proc, result = doctored("forms", "--backend", "aot_eager")
    assert proc.returncode == 0, proc.stderr[-3000:]
    _check_contract(result)
    rows = [
        (r["function"], r["kind"], r["line"], r["compiled_at"]["line"], r["calls"])
        for r in result["functions"]
    ]
    assert rows == [
        ("factory", "function", 6, 6, 3),
        ("bare", "function", 11, 11, 0),
        ("Net.forward", "module", 21, 26, 3),
        ("Net.forward", "method", 21, 28, 3),
        ("legacy", "function", 39, 43, 2),  # torch._dynamo.optimize: was not timed at all
    ]
    assert {r["options"]["backend"] for r in result["functions"]} == {"aot_eager"}  # --backend
    (never,) = _kinds(result, "never_called")
    assert (never["line"], never["function"]) == (11, "bare")
    # aot_eager: said once per compiled function that ran, and none of them claims to be faster
    assert len(_kinds(result, "capture_only_backend")) == 5
    assert all(r["verdict"] != "faster" for r in result["functions"])
    # the compiled module is still an OptimizedModule with its parameters (the script checks numerics)
    log = (Path(result["session"]) / "output.log").read_text()
    assert "OptimizedModule ['_orig_mod.lin.bias', '_orig_mod.lin.weight']" in log


def test_result_lands_in_the_session(doctored):
    _, result = doctored("recompiles")
    session = Session.open(result["session"])
    (event,) = [e for e in session.events if e.get("event") == "doctor"]
    assert event["summary"] == result["summary"]
    assert session.info["command"] == "doctor"
    # `fxlens report` on the doctor session shows the compiled run and the doctor summary
    text = render_text(build_report(session))
    assert f"[doctor] {result['summary']}" in text
    assert len(session.recompiles) >= 3


def test_script_that_compiles_nothing(doctor_root):
    proc = fxlens("doctor", SCRIPTS / "nothing.py", env_root=doctor_root)
    assert proc.returncode != 0
    assert "compiles nothing" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    # said after the eager run, which never called torch.compile: no compiled run was started
    session = Path(proc.stderr.rsplit("(session: ", 1)[1].rstrip(")\n"))
    assert (session / "eager-1" / "output.log").exists() and not (session / "output.log").exists()


def test_bad_input_is_one_line(doctor_root, tmp_path):
    for args in (
        ("doctor", tmp_path / "missing.py"),
        ("doctor", "--rounds", "0", SCRIPTS / "hurts.py"),
        ("doctor", "--budget", "-1", SCRIPTS / "hurts.py"),
    ):
        proc = fxlens(*args, env_root=doctor_root)
        assert proc.returncode == 2
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


@pytest.mark.slow  # a failing compiled run (extra doctor rounds)
def test_compiled_run_that_fails_is_the_top_finding(doctored):
    backend = f"{SCRIPTS / 'bad_backend.py'}:bad"
    proc, result = doctored("hurts", "--backend", backend)
    assert proc.returncode == 1  # the compiled run's own status
    assert result["exit_codes"] == {"eager": [0], "compiled": [1]}
    top = result["findings"][0]
    assert top["kind"] == "compiled_run_failed"
    assert "RuntimeError: backend exploded" in top["message"]
    assert (top["file"], top["line"]) == (str(SCRIPTS / "bad_backend.py"), 5)
    assert "fxlens bisect" in top["fix"]
    assert not [f for f in result["findings"] if f["kind"] == "never_called"]


def test_generate_on_the_compiled_module_is_named_as_the_reason_nothing_ran_compiled(doctor_root):
    # `compiled = torch.compile(model); compiled.generate(...)`: generate is the original module's
    # method, so the compiled forward is never called (the probe counts its calls: 0)
    script = Path(__file__).parents[1] / "capture" / "scripts" / "real" / "hf_generate.py"
    call = next(i for i, s in enumerate(script.read_text().splitlines(), 1) if "= compiled.generate(" in s)
    proc = fxlens("doctor", "--budget", "0", "--json", "-", script, "llama", "module", env_root=doctor_root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    (row,) = result["functions"]
    assert row["calls"] == 0 and row["timing"]["why"] == "never called in this run"
    (f,) = [f for f in result["findings"] if f["kind"] == "never_called"]
    assert f"hf_generate.py:{call} runs the original module" in f["fix"] and "model.compile()" in f["fix"]
