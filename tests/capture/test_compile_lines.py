"""Dynamo's seconds by source line: measured in the runner, checked against torch's own times."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from capture_helpers import SCRIPTS, fxlens

from fxlens.trace.linetimes import chromium_parts


def _loop_line(script) -> int:
    return next(i for i, t in enumerate(script.read_text().splitlines(), 1) if "# the loop" in t)


def _torch_dynamo_seconds(log) -> dict[str, float]:
    """compile id -> torch's Dynamo seconds (frame less backend), read from the log by hand."""
    out = {}
    for line in open(log, encoding="utf-8"):
        if '"compilation_metrics"' in line:
            rec = json.loads(line[line.index("] ") + 2 :])
            m = rec["compilation_metrics"]
            out[f"{rec['frame_id']}/{rec['frame_compile_id']}"] = m["entire_frame_compile_time_s"] - (
                m["backend_compile_time_s"] or 0
            )
    return out


@pytest.fixture(scope="module")
def loop_report(run_report):
    proc, report = run_report("unrolled_loop")
    assert proc.returncode == 0, proc.stderr
    return report


def test_the_loop_gets_most_of_dynamos_seconds(loop_report):
    sec = loop_report["compile_lines"]
    assert sec["available"]
    loop = sec["loops"][0]
    assert loop["file"].endswith("unrolled_loop.py")
    assert loop["line"] == _loop_line(SCRIPTS / "unrolled_loop.py")
    assert loop["iterations"] == 300  # the backward jump stepped once per iteration
    assert loop["incl_s"] >= 0.5 * sec["dynamo_s"]
    assert "unrolling the loop at" in sec["headline"] and "300 iterations" in sec["headline"]
    # the body's line was entered once per iteration, and inlined Linear.forward under it
    body = next(ln for ln in sec["top_lines"] if ln["file"].endswith("unrolled_loop.py"))
    assert body["line"] == loop["line"] + 1 and body["hits"] == 300
    assert any(f["file"].endswith("torch/nn/modules/linear.py") for f in sec["functions"])


def test_the_loop_carries_its_block_class_and_fixes(loop_report):

    import torch

    loop = loop_report["compile_lines"]["unrolled_loop"]
    # the class is the code Dynamo inlined once per iteration: torch.nn.Linear.forward, by inspect
    code = torch.nn.Linear.forward.__code__
    assert loop["block_class"] == "Linear" and loop["iterations"] == 300
    assert (loop["block_file"], loop["block_line"]) == (code.co_filename, code.co_firstlineno)
    assert loop["line"] == _loop_line(SCRIPTS / "unrolled_loop.py")
    assert [(a["kind"], a["params"]["block"]) for a in loop["actions"]] == [
        ("nested_region", "Linear"),
        ("regional", "Linear"),
    ]


def test_attributed_total_matches_torchs_dynamo_time(loop_report):
    sec = loop_report["compile_lines"]
    log = loop_report["source"]["logs"][0]
    by_hand = _torch_dynamo_seconds(log)
    rows = sec["per_compile"]
    assert {r["compile_id"] for r in rows} <= set(by_hand)
    torch_total = sum(by_hand[r["compile_id"]] for r in rows)
    # measured parts: the traced steps and output graph (timed by the runner), guards (torch's event)
    assert sec["measured_s"] == pytest.approx(torch_total, rel=0.10)
    # the traced steps alone against torch's own bytecode_tracing event for the same span
    torch_tracing = sum(chromium_parts(log)[r["compile_id"]]["bytecode_tracing"] for r in rows)
    assert sec["parts_s"]["traced"] == pytest.approx(torch_tracing, rel=0.10)
    # shares of the lines' self seconds add up to the traced part
    self_total = sum(f["self_s"] for f in sec["functions"])
    assert self_total == pytest.approx(sec["parts_s"]["traced"], rel=0.02)


def test_text_report_names_the_loop(loop_report, tmp_path):
    proc = fxlens("report", loop_report["source"]["path"])
    assert proc.returncode == 0, proc.stderr
    assert "Where Dynamo's" in proc.stdout
    assert f"unrolled_loop.py:{_loop_line(SCRIPTS / 'unrolled_loop.py')}" in proc.stdout
    html = tmp_path / "r.html"
    proc = fxlens("report", loop_report["source"]["path"], "--format", "html", "--out", html)
    assert proc.returncode == 0, proc.stderr
    page = html.read_text()
    assert "by source line" in page and "x = torch.relu(layer(x))" in page and "<details>" in page


def test_a_bare_torch_trace_has_no_line_times(tmp_path):
    trace = tmp_path / "trace"
    env = {**os.environ, "TORCH_TRACE": str(trace)}
    script = tmp_path / "small.py"
    script.write_text(
        "import torch\n@torch.compile(backend='eager')\ndef f(x):\n    for _ in range(3):\n        x = x + 1\n"
        "    return x\nf(torch.ones(2))\n"
    )
    subprocess.run([sys.executable, str(script)], env=env, check=True, timeout=300)
    out = tmp_path / "r.json"
    proc = fxlens("report", trace, "--json", out)
    assert proc.returncode == 0, proc.stderr
    sec = json.loads(out.read_text())["compile_lines"]
    assert sec == {"available": False, "note": sec["note"]} and "only while the script runs under fxlens" in sec["note"]
    assert "Dynamo by source line: " in proc.stdout


def test_switched_off_writes_nothing(tmp_path):
    # a small loop, not unrolled_loop.py's 300 layers: switched on, every compile under fxlens has
    # line times (the loop report's `available`); switched off, this one compile has none
    script = tmp_path / "small.py"
    script.write_text(
        "import torch\n@torch.compile(backend='eager')\ndef f(x):\n    for _ in range(3):\n        x = x + 1\n"
        "    return x\nf(torch.ones(2))\n"
    )
    out = tmp_path / "r.json"
    proc = fxlens(
        "run", "--session", tmp_path / "s", "--json", out, script, env={"FXLENS_COMPILE_LINES": "0"}
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert [(g["function"], g["line"]) for g in report["graphs"]] == [("f", 2)]  # it compiled
    assert report["compile_lines"]["available"] is False
