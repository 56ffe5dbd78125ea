"""`fxlens doctor` on real scripts: compile helps, compile hurts, recompiles, DDP compiled after wrapping.

Timings are never compared with thresholds, except where the gap is structural (aot_eager runs the
same ops as eager plus Dynamo's per-graph overhead, so with tiny tensors it cannot be faster).
"""

import subprocess
import sys
from pathlib import Path

import pytest
from doctor_helpers import SCRIPTS, fxlens

from fxlens.report.build import build_report, render_text
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
    assert set(result["peak_memory"]) >= {"eager", "compiled"}
    assert result["peak_memory"]["eager"] > 0 and result["peak_memory"]["compiled"] > 0
    costs = [f["cost_ms"] for f in result["findings"]]
    assert costs == sorted(costs, reverse=True)  # ranked by estimated cost


def test_compile_helps_fused_pointwise_chain(doctored):
    proc, result = doctored("helps")
    assert proc.returncode == 0, proc.stderr[-3000:]
    _check_contract(result)
    (row,) = result["functions"]
    assert (row["function"], row["line"], row["calls"]) == ("chain", 15, 40)
    assert row["compiled_at"] == {"file": str(SCRIPTS / "helps.py"), "line": 21}
    assert row["options"]["backend"] == "inductor"
    # inductor fuses 32 pointwise ops into one loop: many times faster, not a near call
    assert row["speedup"] > 1.0
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
    breaks = _kinds(result, "graph_break")
    assert sorted(f["line"] for f in breaks) == [8, 10, 12]
    assert all(f["file"] == str(SCRIPTS / "hurts.py") for f in breaks)
    fixes = {f["line"]: f["fix"] for f in breaks}
    assert "graph_break()" in fixes[8] and "print" in fixes[10]
    (slow,) = _kinds(result, "slower_than_eager")
    assert (slow["line"], slow["function"]) == (16, "step")
    assert "3 graph break(s)" in slow["fix"]
    assert result["findings"][0]["kind"] == "slower_than_eager"
    # the text report names every break line and the fix
    assert "hurts.py:8" in proc.stdout and "hurts.py:12" in proc.stdout
    assert "Findings, by estimated cost" in proc.stdout


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


@pytest.mark.slow  # a 2-process gloo job
def test_ddp_compiled_after_wrapping(doctored):
    proc, result = doctored("ddp_wrong_order", "--nproc", "2", "--timeout", "300")
    assert proc.returncode == 0, proc.stderr[-3000:]
    _check_contract(result)
    (row,) = result["functions"]
    assert row["wrapped_in"] == "DistributedDataParallel" and row["calls"] == 6
    assert row["backward_not_timed"]
    assert result["ranks"] == [0, 1] and "2 ranks" in proc.stdout
    (wrap,) = _kinds(result, "compiled_after_wrap")
    assert (wrap["file"], wrap["line"]) == (str(SCRIPTS / "ddp_wrong_order.py"), 14)
    assert "model.compile()" in wrap["fix"] and "inner module" in wrap["fix"]
    assert result["exit_codes"] == {"eager": [0], "compiled": [0]}


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
    for args in (("doctor", tmp_path / "missing.py"), ("doctor", "--rounds", "0", SCRIPTS / "hurts.py")):
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
