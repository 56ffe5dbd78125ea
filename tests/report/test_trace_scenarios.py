"""torch's test_structured_trace scenarios that tlparse's inputs lack, recorded here with torch 2.13
(tests/data/traces/record_scenarios.py): DDP on 2 gloo ranks with the DDP optimizer, compiled
autograd, dump_file, a make_fx failure. Each is checked against the raw records of its own log."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from schema_check import validate
from test_tlparse_inputs import raw_records

from fxlens.report.build import build_report
from fxlens.report.text import render_text
from fxlens.trace.session import Session

SCENARIOS = Path(__file__).resolve().parents[1] / "data" / "traces" / "2.13.0" / "scenarios"


@cache
def report_of(name: str) -> dict:
    return build_report(Session.open(SCENARIOS / name))


def _count(name: str, key: str) -> int:
    return sum(key in r for log in (SCENARIOS / name).glob("*.log") for r, _ in raw_records(log))


def test_ddp_graph_splits_are_shown_as_such_on_both_ranks():
    report = report_of("ddp")
    assert report["ranks"] == [0, 1]
    kinds = [s["kind"] for s in report["special_graphs"]]
    # every split and child record of both ranks, folded across the ranks that logged it
    assert kinds.count("ddp_split") * 2 == _count("ddp", "optimize_ddp_split_graph") == 2
    assert kinds.count("ddp_child") * 2 == _count("ddp", "optimize_ddp_split_child") == 6
    assert all(s["ranks"] == [0, 1] for s in report["special_graphs"])
    (split,) = [s for s in report["special_graphs"] if s["kind"] == "ddp_split"]
    assert [g["kind"] for g in report["graphs"] if g["compile_id"] == split["compile_id"]] == [
        "ddp_split"
    ] * 2
    assert "DDP optimizer split" in render_text(report)
    assert "RANK DIVERGENCE" not in render_text(report)


def test_compiled_autograd_graphs_keep_their_ids():
    ids = {
        f"!{r['compiled_autograd_id']}/{r['frame_id']}/{r['frame_compile_id']}"
        for log in (SCENARIOS / "compiled_autograd").glob("*.log")
        for r, _ in raw_records(log)
        if r.get("compiled_autograd_id") is not None and "frame_id" in r
    }
    report = report_of("compiled_autograd")
    got = {g["compile_id"] for g in report["graphs"] if g["kind"] == "compiled_autograd"}
    assert got == ids and ids  # e.g. !0/1/0, never folded into the plain 1/0
    assert any(s["kind"] == "compiled_autograd" for s in report["special_graphs"])


def test_dump_file_and_make_fx_failure_are_read():
    (dump,) = [s for s in report_of("dump_file")["special_graphs"] if s["kind"] == "dump_file"]
    raw = next(r for r, _ in raw_records(next((SCENARIOS / "dump_file").glob("*.log"))) if "dump_file" in r)
    assert dump["name"] == raw["dump_file"]["name"]
    report = report_of("make_fx_fail")
    (fail,) = report["special_graphs"]
    payload = next(
        p
        for r, p in raw_records(next((SCENARIOS / "make_fx_fail").glob("*.log")))
        if "artifact" in r and r["artifact"]["name"] == "make_fx_fail_partial"
    )
    assert fail["kind"] == "make_fx_fail_partial" and "add" in payload
    text = render_text(report)
    assert "make_fx failed partway" in text and "No graphs were compiled" not in text
    for name in ("ddp", "compiled_autograd", "dump_file", "make_fx_fail"):
        validate("report", report_of(name))
        json.dumps(report_of(name))
