"""Memory bounded by what the report keeps: records the model read whole leave memory (read back from
disk on demand), the same guards on many ranks are one list, and the read models can be let go."""

from __future__ import annotations

import json

from fxlens.report.build import build_report
from fxlens.trace.kinds import table
from fxlens.trace.session import Session


def test_records_read_into_the_model_are_dropped_and_read_back(job_many_outliers):
    session = Session.open(job_many_outliers)
    r5 = next(r for r in session.ranks if r.rank == 5)
    SLIM_KINDS = table().slim
    recs = [rec for recs in r5.by_compile.values() for rec in recs if rec.kind in SLIM_KINDS]
    assert {rec.kind for rec in recs} == set(SLIM_KINDS)
    lines = open(r5.log, encoding="utf-8").read().split("\n")
    for rec in recs:
        assert rec.meta == {}  # out of memory...
        logged = json.loads(lines[rec.line_no - 1].split("] ", 1)[1])
        assert rec.full_meta() == logged  # ...and back, whole, from the log
    # what the model read from them is still there: rank 5's two compiles and their times
    logged_metrics = [json.loads(ln.split("] ", 1)[1]) for ln in lines if '] {"compilation_metrics"' in ln]
    assert [m.compile_id for m in r5.metrics] == [
        x["compilation_metrics"]["compile_id"] for x in logged_metrics
    ]
    assert [m.total_s for m in r5.metrics] == [
        x["compilation_metrics"]["entire_frame_compile_time_s"] for x in logged_metrics
    ]


def test_same_guards_are_one_list_and_models_can_go(job_many_outliers):
    session = Session.open(job_many_outliers)
    report = build_report(session)
    first = {}
    for g in report["guards"]:
        # equal guard text on two ranks: the very same list object (the JSON still has both)
        key = "\n".join(g["guards"])
        assert first.setdefault(key, g["guards"]) is g["guards"]
    assert len(first) < len(report["guards"])
    session.release()
    assert "ranks" not in session.__dict__
    assert build_report(session) == report  # read again on demand: the same report
