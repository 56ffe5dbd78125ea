"""The backend's seconds by pass, from torch's timed events, on a real inductor trace (torch 2.13)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from fxlens.report.build import build_report
from fxlens.report.text import render_text
from fxlens.trace.session import Session

INDUCTOR = Path(__file__).parents[1] / "data" / "inductor"


@pytest.fixture(scope="module")
def fused(tmp_path_factory) -> Path:
    log = tmp_path_factory.mktemp("fused") / "dedicated_log_torch_trace_fused.log"
    log.write_bytes(gzip.decompress((INDUCTOR / "fused.log.gz").read_bytes()))
    return log


def _backend_s(log: Path) -> float:
    """torch's backend seconds of the trace's one compile, read from the log by hand."""
    line = next(x for x in log.read_text().splitlines() if '"compilation_metrics"' in x)
    return json.loads(line[line.index("] ") + 2 :])["compilation_metrics"]["backend_compile_time_s"]


def test_passes_add_up_to_torchs_backend_seconds(fused):
    report = build_report(Session.open(fused), with_guards=False)
    sec = report["compile_passes"]
    (one,) = sec["per_compile"]
    assert one["compile_id"] == "0/0"
    # every event under backend_compile, each counted once by its self seconds: the backend's time
    assert sum(one["stages_s"].values()) == pytest.approx(_backend_s(fused), rel=0.02)
    names = {p["name"] for p in sec["by_pass"]}
    assert {"GraphLowering.run", "Scheduler.codegen", "aot_collect_metadata"} <= names
    stage = {p["name"]: p["stage"] for p in sec["by_pass"]}
    assert stage["Scheduler.codegen"] == "inductor" and stage["aot_collect_metadata"] == "aot_autograd"
    # a trace written without fxlens has no line times, and says why
    assert report["compile_lines"]["available"] is False


def test_text_names_the_heaviest_pass(fused):
    report = build_report(Session.open(fused), with_guards=False)
    text = render_text(report)
    top = report["compile_passes"]["by_pass"][0]
    assert "Where the backend's" in text and top["name"] in text
