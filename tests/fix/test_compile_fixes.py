"""Compile-time findings beyond the loop (fxlens.report.compilefixes), tried by `fxlens fix`.

Ground truth is the same edit made by hand in a fresh interpreter under TORCH_TRACE: its graphs,
breaks and recompiles (fxlens report of torch's trace) and its compile seconds (torch's
compilation_metrics, read from the raw log here, not through fxlens).
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fix_helpers import SCRIPTS
from fix_helpers import run_fix as _fix
from schema_check import validate

from fxlens.fix.appliers import APPLIERS
from fxlens.fix.measure import compile_noise


def _metrics(trace) -> list[dict]:
    """torch's compilation_metrics records of a TORCH_TRACE folder, in order."""
    out = []
    for log in sorted(trace.glob("*.log")):
        for line in open(log, encoding="utf-8"):
            if '"compilation_metrics"' in line:
                out.append(json.loads(line[line.index("] ") + 2 :])["compilation_metrics"])
    return out


def _by_hand(tmp_path, script: str, old: str = "", new: str = "") -> dict:
    """SCRIPT with OLD replaced by NEW (as it is without them), run in a fresh interpreter under
    TORCH_TRACE."""
    src = (SCRIPTS / script).read_text()
    edited = src.replace(old, new) if old else src
    assert edited != src or not old
    name = "by_hand" if old else "as_is"
    (tmp_path / f"{name}.py").write_text(edited)
    trace = tmp_path / f"trace-{name}"
    env = {**os.environ, "TORCH_TRACE": str(trace)}
    subprocess.run([sys.executable, f"{name}.py"], cwd=tmp_path, env=env, check=True, timeout=600)
    report = json.loads(
        subprocess.run([sys.executable, "-m", "fxlens.cli", "report", str(trace), "--json", "-"],
                       capture_output=True, text=True, check=True).stdout
    )  # fmt: skip
    secs = sum(m["entire_frame_compile_time_s"] or 0.0 for m in _metrics(trace))
    return {
        "graphs": len(report["graphs"]),
        "breaks": sum(b["count"] for b in report["graph_breaks"]),
        "recompiles": len(report["recompiles"]),
        "compile_s": secs,
    }


def _first_run_metrics(result) -> dict[str, float]:
    """compile id -> torch's seconds for it, from the first run's own TORCH_TRACE log (the session's
    `trace` folder; each re-run has its own under `fix-N`)."""
    return {
        m["compile_id"]: m["entire_frame_compile_time_s"] or 0.0
        for m in _metrics(Path(result["session"]) / "trace")
    }


def _agrees(fix_s: float, hand_s: float) -> bool:
    """Two runs' compile seconds agree within what the load moves them by (fix's own noise band)."""
    return abs(fix_s - hand_s) <= compile_noise(max(fix_s, hand_s))


@pytest.mark.slow  # 6 compiles, 1 re-run, and the same edit by hand (~60 s under load)
def test_retraced_shapes_mark_dynamic_is_measured_as_the_same_edit_by_hand(tmp_path):
    proc, result = _fix(tmp_path, "retrace_shapes.py")
    assert proc.returncode == 0, proc.stderr[-2000:]
    validate("fix", result)
    md = next(f for f in result["fixes"] if f["kind"] == "mark_dynamic")
    assert md["params"]["arg"] == "x" and md["params"]["dim"] == 1 and md["applied"]
    assert "Dynamo traced `forward` 7 more times for new sizes of input `x`, dim 1: " in md["finding"]
    # the finding's cost is torch's seconds of the 5 re-traces in the first run (its own log)
    report = json.loads(
        subprocess.run([sys.executable, "-m", "fxlens.cli", "report", result["session"], "--json", "-"],
                       capture_output=True, text=True, check=True).stdout
    )  # fmt: skip
    finding = next(f for f in report["compile_fixes"] if f["kind"] == "retraced_shapes")
    torch_s = _first_run_metrics(result)
    assert sorted(torch_s) == [f"0/{i}" for i in range(8)]
    assert finding["compile_ids"] == [f"0/{i}" for i in range(1, 8)]
    assert finding["cost_s"] == pytest.approx(sum(torch_s[c] for c in finding["compile_ids"]), abs=1e-3)
    # the same mark by hand: one compile serves every length
    as_is = _by_hand(tmp_path, "retrace_shapes.py")
    hand = _by_hand(
        tmp_path,
        "retrace_shapes.py",
        "    print(model(torch.randn(2, length, 16)).shape)",
        "    x = torch.randn(2, length, 16)\n    torch._dynamo.mark_dynamic(x, 1)\n    print(model(x).shape)",
    )
    after = md["after"]
    assert (after["graphs"], after["breaks"], after["recompiles"]) == (
        hand["graphs"], hand["breaks"], hand["recompiles"]) == (1, 0, 0)  # fmt: skip
    assert _agrees(after["compile_s"], hand["compile_s"]), (after, hand)
    # eight static traces -> one dynamic trace (dearer than a static one: about half of the eight
    # by hand at a load of 9 on 2 cores): a fall in fix's re-run and by hand alike, each against a
    # run of the script as it is in its own process
    assert as_is["graphs"] == md["before"]["graphs"] == 8
    assert after["compile_s"] < 0.75 * md["before"]["compile_s"]
    assert hand["compile_s"] < 0.75 * as_is["compile_s"]


@pytest.mark.slow  # a first run, 1 re-run, and the same edit by hand (~45 s under load)
def test_a_helper_that_makes_no_op_is_disabled_and_measured_as_the_same_edit_by_hand(tmp_path):
    proc, result = _fix(tmp_path, "skip_helper.py")
    assert proc.returncode == 0, proc.stderr[-2000:]
    validate("fix", result)
    off = next(f for f in result["fixes"] if f["kind"] == "disable")
    assert off["params"]["function"] == "check_schedule" and off["params"]["first_line"] == 10
    assert off["applied"] and off["outputs_equal"] is True
    assert "tracing `check_schedule` (skip_helper.py:10), which put no op in the graph" in off["finding"]
    as_is = _by_hand(tmp_path, "skip_helper.py")
    hand = _by_hand(
        tmp_path,
        "skip_helper.py",
        "class Net(",
        "check_schedule = torch.compiler.disable(check_schedule)\n\n\nclass Net(",
    )
    after = off["after"]
    assert (after["graphs"], after["breaks"], after["recompiles"]) == (
        hand["graphs"], hand["breaks"], hand["recompiles"])  # fmt: skip
    assert hand["breaks"] == 1  # torch.compiler.disable breaks the graph at the call: said, measured
    assert _agrees(after["compile_s"], hand["compile_s"]), (after, hand)
    # Dynamo no longer traces the 8000 steps: most of the compile is gone, in both runs
    assert (as_is["graphs"], as_is["breaks"]) == (off["before"]["graphs"], off["before"]["breaks"]) == (1, 0)
    assert after["compile_s"] < off["before"]["compile_s"] / 2
    assert hand["compile_s"] < as_is["compile_s"] / 2


def test_the_disable_applier_wraps_the_function_wherever_it_is_held(tmp_path, monkeypatch):
    # a module defines the helper, another imports it under another name, a class holds it as a
    # static method: each reference becomes the disabled function, and Dynamo then skips it
    import torch

    (tmp_path / "helpers_mod.py").write_text(
        "def helper(n):\n    return sum(i % 3 for i in range(n))\n\n\n"
        "class Holder:\n    check = staticmethod(helper)\n"
    )
    (tmp_path / "user_mod.py").write_text("from helpers_mod import helper as renamed\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    helpers, user = importlib.import_module("helpers_mod"), importlib.import_module("user_mod")
    params = {"function": "helper", "file": str(tmp_path / "helpers_mod.py"), "first_line": 1}
    assert APPLIERS["disable"](None, params) == 3
    assert helpers.helper is user.renamed and helpers.helper is helpers.Holder.check

    graphs = []

    def count(gm, example_inputs):
        graphs.append(gm)
        return gm

    @torch.compile(backend=count)
    def f(x):
        return (x.sin() + user.renamed(50)).cos()

    f(torch.ones(2))
    assert len(graphs) == 2  # the graph breaks at the skipped call: torch did not trace it
    assert APPLIERS["disable"](None, params) is None  # already wrapped: nothing left to wrap


def test_a_ranks_retraces_are_a_share_of_that_ranks_compiling():
    # two ranks each compiled 10 s; rank 1 re-traced twice for 2 s each: 4 s of rank 1's 10 s (40%),
    # not of the job's 20 s (every rank compiles its own copy, in parallel)
    from fxlens.report.compilefixes import retraced_shapes

    rows = [("0/0", 6.0), ("0/1", 2.0), ("0/2", 2.0)]
    per = [{"rank": r, "compile_id": cid, "total_s": s} for r in (0, 1) for cid, s in rows]
    mark = {"kind": "mark_dynamic", "params": {"arg": "x", "dim": 0}}
    cause = {"function": "f", "message": "x changed", "compile_ids": ["0/1", "0/2"], "ranks": [1], "actions": [mark]}
    report = {"compile_times": {"per_compile": per, "total_s": 20.0}, "recompile_causes": [cause]}
    (f,) = retraced_shapes(report)
    assert (f["cost_s"], f["share"]) == (4.0, 0.4)
    assert f["message"].endswith("4.00 s (40%) of 10.00 s compiling on rank 1")
    # one rank: the trace's total, no rank named
    one = [{"rank": None, "compile_id": cid, "total_s": s} for cid, s in rows]
    report = {"compile_times": {"per_compile": one, "total_s": 10.0}, "recompile_causes": [{**cause, "ranks": None}]}
    (f,) = retraced_shapes(report)
    assert (f["share"], f["message"].endswith("4.00 s (40%) of 10.00 s compiling")) == (0.4, True)
