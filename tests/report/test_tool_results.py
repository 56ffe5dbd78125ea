"""The tools' typed results (fxlens.report.*_result) against their JSON schemas and real output.

tests/report/results/ holds `--json` files that `fxlens bisect`, `minify`, `fix` and `doctor` wrote
in this repo's own tests (tests/bisect, minify, fix, doctor), their temporary folder renamed. Each
must read back into its result type and serialise to the same bytes, keep its schema, and be
refused with one undeclared key added at the top level.
"""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import pytest
from schema_check import SCHEMAS, validate

from fxlens.report.bisect_result import BisectResult, Culprit, StageRow
from fxlens.report.build import build_report
from fxlens.report.doctor_result import DoctorResult
from fxlens.report.fix_result import FixResult, FixRow
from fxlens.report.minify_result import MinifyResult
from fxlens.trace.session import Session

RESULTS = Path(__file__).parent / "results"
TYPES = {"bisect": BisectResult, "minify": MinifyResult, "fix": FixResult, "doctor": DoctorResult}
RECORDED = sorted(RESULTS.glob("*.json"))
TRACE = Path(__file__).parents[1] / "data" / "traces" / "2.13.0" / "dedicated_log_torch_trace.log"


def _kind(path: Path) -> str:
    return path.name.split("-")[0]


def _schema(kind: str) -> dict:
    return json.loads((SCHEMAS / f"{kind}.schema.json").read_text())


def test_every_tool_has_recorded_output():
    assert {_kind(p) for p in RECORDED} == set(TYPES)


@pytest.mark.parametrize("kind", TYPES)
def test_result_type_declares_what_its_schema_does(kind):
    # the dataclass and the published schema name the same top-level keys, and the schema requires
    # exactly those the type always writes (a field marked optional is written only when set)
    schema, declared = _schema(kind), fields(TYPES[kind])
    assert {f.name for f in declared} == set(schema["properties"])
    assert schema["required"] == [f.name for f in declared if not f.metadata.get("optional")]
    assert schema["additionalProperties"] is False


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.stem)
def test_recorded_output_reads_back_to_the_same_bytes(path):
    raw = path.read_text()
    data = json.loads(raw)
    validate(_kind(path), data)
    again = TYPES[_kind(path)].from_json(data).to_json()
    assert json.dumps(again, indent=2) + "\n" == raw  # same keys, same order, same values
    # what the command does: build the object from its parts (an undeclared key is a TypeError)
    assert TYPES[_kind(path)](**data).to_json() == data
    with pytest.raises(TypeError, match="surprise"):
        TYPES[_kind(path)](**data, surprise=1)


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.stem)
def test_schema_refuses_an_undeclared_top_level_key(path):
    data = json.loads(path.read_text())
    with pytest.raises(AssertionError, match="surprise"):
        validate(_kind(path), {**data, "surprise": 1})
    missing = next(iter(_schema(_kind(path))["required"]))
    with pytest.raises(AssertionError, match=missing):
        validate(_kind(path), {k: v for k, v in data.items() if k != missing})


def test_report_schema_refuses_an_undeclared_top_level_key():
    report = build_report(Session.open(TRACE))
    validate("report", report)
    with pytest.raises(AssertionError, match="surprise"):
        validate("report", {**report, "surprise": 1})


def test_an_edited_event_reads_as_absent_fields_never_a_crash():
    # events.jsonl is a file anyone may edit: a field of another type reads as not there
    r = BisectResult.from_json({"summary": "s", "stages": 5, "culprit": "x", "runs": "7", "seconds": True})
    assert (r.stages, r.culprit, r.runs, r.seconds) == ([], None, None, None)
    assert r.lines()[0] == "verdict: s"
    c = BisectResult.from_json(
        {"culprit": {"compile_id": "0/1", "line": "3", "ops": ["aten.erf", 2]}}
    ).culprit
    assert c == Culprit(compile_id="0/1", ops=["aten.erf", "2"])
    m = MinifyResult.from_json({"repro": ["not", "a", "path"], "final_nodes": 2, "flaky": "yes"})
    assert (m.repro, m.final_nodes, m.flaky) == (None, 2, None)
    # the rows of a list too: a row that is no object is left out, a field of another type is absent
    r = BisectResult.from_json({"stages": [3, {"stage": "eager", "ok": "yes", "error": None}]})
    assert r.stages == [StageRow(stage="eager")] and r.stage_ladder() == "eager FAILS"
    f = FixResult.from_json({"fixes": ["x", {"fix": "f", "line": "7", "verdict": "helps", "after": [1]}]})
    assert f.fixes == [FixRow(fix="f", verdict="helps")]


@pytest.mark.parametrize("kind, key, row", [("bisect", "stages", StageRow), ("fix", "fixes", FixRow)])
def test_row_records_write_every_key_their_schema_declares(kind, key, row):
    # a stage row and a fix row are records of their own: every key the schema declares for a row
    # is a field, and each key it requires is always written
    items = _schema(kind)["properties"][key]["items"]
    declared = fields(row)
    assert set(items["properties"]) <= {f.name for f in declared}
    assert set(items["required"]) <= {f.name for f in declared if not f.metadata.get("optional")}
    rows = [r for p in RECORDED if _kind(p) == kind for r in json.loads(p.read_text())[key]]
    assert rows and all(row.from_json(r).to_json() == r for r in rows)


def test_a_fix_sessions_events_read_back_as_its_result_and_blocks():
    # `fxlens fix` appends each fix as an event when measured, then the fixes together, then the
    # summary: read back, they are the result its --json wrote (a row's `event` key is not a field)
    from fxlens.report.document import Details, Para, Table

    data = json.loads((RESULTS / "fix-kw_and_item.json").read_text())
    done = FixResult(**data)
    events = [{"event": "fix", **f} for f in data["fixes"]]
    events += [{"event": "fix_together", **(data["together"] or {})}] if data["together"] else []
    found = FixResult.from_events([*events, {"event": "fix_summary", **done.summary()}])
    assert {**found.to_json(), "fixes": data["fixes"], "together": data["together"]} == data
    assert [f.to_json() for f in found.fixes] == data["fixes"]
    assert found.lines() == done.lines()
    table = next(b for b in found.blocks() if isinstance(b, Table))
    assert [r[1] for r in table.rows] == [f["fix"] for f in data["fixes"]]
    patches = [b for b in found.blocks() if isinstance(b, Details)]
    assert len(patches) == any(f.get("patch") for f in data["fixes"])
    assert any(isinstance(b, Para) for b in found.blocks()) == bool(data["together"])
    # interrupted before the summary: the fixes measured so far; no fix measured: no result
    assert [f.to_json() for f in FixResult.from_events(events[:1]).fixes] == data["fixes"][:1]
    assert FixResult.from_events([{"event": "fix_summary", **done.summary()}]) is None


@pytest.mark.parametrize("path", sorted(RESULTS.glob("doctor-*.json")), ids=lambda p: p.stem)
def test_a_doctor_result_renders_its_own_text_from_the_report_layer(path):
    # what `fxlens doctor` prints, from the recorded result alone (the TUI and `fxlens report` may
    # not import the doctor package): its summary, each finding ranked with its fix, its session
    data = json.loads(path.read_text())
    lines = DoctorResult.from_json(data).lines()
    assert lines[1] == data["summary"] and lines[-1].startswith(f"session: {data['session']}")
    for i, f in enumerate(data["findings"], 1):
        at = next(n for n, x in enumerate(lines) if x.startswith(f"{i:>2}. [{f['kind']}] {f['message']}"))
        assert lines[at + 1].endswith(f": {f['fix']}")
    assert all(any(f["function"] in x for x in lines) for f in data["functions"])
