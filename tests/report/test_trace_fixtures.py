"""The report on TORCH_TRACE logs recorded under every torch version fxlens supports.

tests/data/traces/<version>/ holds a log of the same fixed script (tests/data/traces/record.py: a
graph break, a recompile on a new shape, a recompile on grad mode, a training step under aot_eager),
recorded under that torch release. Reading them here tests the parsers against each version's
wording without installing it; a new release gets a new folder (tests/data/traces/README.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from schema_check import validate

from fxlens.report.build import build_report
from fxlens.trace.session import Session

TRACES = Path(__file__).resolve().parents[1] / "data" / "traces"
VERSIONS = sorted(p.name for p in TRACES.iterdir() if p.is_dir())


def test_every_supported_release_has_a_fixture():
    assert {"2.13.0", "2.14.1", "2.15.0"} <= set(VERSIONS)


@pytest.mark.parametrize("version", VERSIONS)
def test_fixture_stays_small(version):
    for log in (TRACES / version).iterdir():
        assert log.stat().st_size < 200_000, f"{log}: trim it (tests/data/traces/trim.py)"


@pytest.fixture(scope="module", params=VERSIONS)
def report(request):
    return request.param, build_report(Session.open(TRACES / request.param))


def test_report_matches_its_schema(report):
    validate("report", report[1])


def test_counts(report):
    version, r = report
    # record.py: breaks() -> 2 graphs around print; shapes() -> 2 (4 then 6 elements, dynamic=False);
    # grad_mode() -> 2 (grad on, then off); Net.forward under aot_eager -> 1
    assert len(r["graphs"]) == 7, version
    assert [(b["function"], b["line"], b["count"]) for b in r["graph_breaks"]] == [("breaks", 16, 1)]
    assert sorted(c["function"] for c in r["recompiles"]) == ["grad_mode", "shapes"]
    assert r["skipped"] == []


def test_break_and_recompile_reasons_are_torch_text(report):
    version, r = report
    for b in r["graph_breaks"]:
        assert b["reason"].strip() and Path(b["file"]).name == "record.py", (version, b)
    for c in r["recompiles"]:
        guards = c["failed_guards"]
        assert guards and all(g.strip() for g in guards), (version, c)
    by_function = {c["function"]: " ".join(c["failed_guards"]) for c in r["recompiles"]}
    assert "size mismatch" in by_function["shapes"] and "grad_mode" in by_function["grad_mode"], version


def test_recompile_causes_name_the_changed_input(report):
    version, r = report
    messages = [c["message"] for c in r["recompile_causes"]]
    assert "input `x`, dim 0 took values 4, 6" in messages, (version, messages)
