"""The TORCH_TRACE log reader itself (fxlens.trace.reader), on logs torch wrote (tests/data) and on
copies of them edited the way logs break: each record's envelope, a torn last line, payloads that
differ from the md5 torch logged, kinds no row knows, kinds skipped unread and kinds slimmed."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from fxlens.trace.kinds import table
from fxlens.trace.model import build_rank_model
from fxlens.trace.payloads import corrupt_notes
from fxlens.trace.reader import GLOG_PREFIX, scan_log

DATA = Path(__file__).resolve().parents[1] / "data"
COMP_METRICS = DATA / "tlparse" / "comp_metrics.log"  # torch 2.3: restarts (attempt 1), JSON guards
TRACE = DATA / "traces" / "2.15.0" / "dedicated_log_torch_trace.log"
META = {
    "frame_id",
    "frame_compile_id",
    "attempt",
    "has_payload",
    "rank",
    "compiled_autograd_id",
    "subgraph_name",
}


def _records(path: Path) -> list[tuple[int, dict]]:
    """(line number, metadata) of every record line, decoded here without the reader."""
    out = []
    for n, line in enumerate(path.read_bytes().split(b"\n"), 1):
        if line and not line.startswith(b"\t"):
            out.append((n, json.loads(line.split(b"] ", 1)[1])))
    return out


def _kind(meta: dict) -> str:
    key = next(k for k in meta if k not in META)
    return f"artifact:{meta['artifact']['name']}" if key == "artifact" else key


def test_each_record_keeps_its_kind_compile_id_and_payload_as_logged():
    scan = scan_log(COMP_METRICS)
    logged = {n: m for n, m in _records(COMP_METRICS) if _kind(m) != "str"}
    assert [r.line_no for r in scan.records] == list(logged)
    for rec in scan.records:
        meta = logged[rec.line_no]
        assert rec.kind == _kind(meta)
        if "frame_id" in meta:
            attempt = f"_{meta['attempt']}" if meta.get("attempt") else ""
            assert str(rec.compile_id) == f"{meta['frame_id']}/{meta['frame_compile_id']}{attempt}"
        if "has_payload" in meta:  # the payload read back from disk hashes to torch's md5 of it
            assert hashlib.md5(rec.payload().encode()).hexdigest() == meta["has_payload"]
    assert scan.pid == int(GLOG_PREFIX.match(COMP_METRICS.read_bytes()).group(1))
    # the interned file names, as the `str` records list them
    assert scan.strings == {m["str"][1]: m["str"][0] for _, m in _records(COMP_METRICS) if "str" in m}
    assert scan.bad == [] and scan.notes == []


def test_a_torn_last_line_is_counted_and_the_rest_is_read(tmp_path):
    data = COMP_METRICS.read_bytes()
    last = data.rstrip(b"\n").rfind(b"\n") + 1  # the start of the last line
    torn = tmp_path / "torn.log"
    torn.write_bytes(data[: last + (len(data) - last) // 2])  # cut in the middle of its JSON
    whole, cut = scan_log(COMP_METRICS), scan_log(torn)
    assert cut.lines == whole.lines
    assert (cut.lines, "not JSON (torn or corrupt)") in cut.bad
    assert [r.line_no for r in cut.records] == [r.line_no for r in whole.records if r.line_no != whole.lines]


def test_a_payload_that_differs_from_its_md5_is_read_as_it_is_and_said(tmp_path):
    data = COMP_METRICS.read_text()
    graph = next(n for n, m in _records(COMP_METRICS) if "dynamo_output_graph" in m)
    lines = data.split("\n")
    at = next(i for i in range(graph, len(lines)) if "cos" in lines[i])  # a line of the graph's payload
    assert lines[at].startswith("\t")
    lines[at] = lines[at].replace("cos", "sin", 1)
    edited = tmp_path / "edited.log"
    edited.write_text("\n".join(lines))
    scan = scan_log(edited)
    assert not corrupt_notes([scan.path])  # checked where a payload is read, not while scanning
    rec = next(r for r in scan.records if r.line_no == graph)
    assert "sin" in rec.payload()  # read as it is
    (note,) = corrupt_notes([scan.path])
    assert (
        "1 payload(s) differ from what torch logged" in note and f"line {graph} (dynamo_output_graph)" in note
    )


def test_crlf_line_ends_are_not_an_edit(tmp_path):
    crlf = tmp_path / "crlf.log"
    crlf.write_bytes(COMP_METRICS.read_bytes().replace(b"\n", b"\r\n"))
    scan = scan_log(crlf)
    plain = scan_log(COMP_METRICS)
    assert [r.payload() for r in scan.records] == [r.payload() for r in plain.records]
    assert scan.notes == [] and corrupt_notes([scan.path]) == []


def test_a_kind_no_row_knows_is_kept_and_counted(tmp_path):
    lines = COMP_METRICS.read_text().split("\n")
    prefix = lines[0].split("] ", 1)[0]
    lines.insert(20, prefix + '] {"brand_new_record": {"x": 1}, "frame_id": 0, "frame_compile_id": 0}')
    log = tmp_path / "new.log"
    log.write_text("\n".join(lines))
    assert table().get("brand_new_record") is None
    model = build_rank_model(scan_log(log))
    assert model.unknown_kinds == {"brand_new_record": 1}
    assert [r.kind for r in model.by_compile["0/0"]].count("brand_new_record") == 1


def test_kinds_skipped_unread_never_become_records():
    log = DATA / "tlparse" / "simple.log"
    skipped = {row.name for row in table() if row.skip}
    logged = {_kind(m) for _, m in _records(log)}
    assert "chromium_event" in skipped & logged  # the log holds some: the test means something
    assert not {r.kind for r in scan_log(log).records} & skipped


def test_guard_added_is_read_only_when_export_evaluated_it(tmp_path):
    # export_guard_added.log's one guard export evaluated, and a copy torch logs as a runtime assert
    lines = (DATA / "tlparse" / "export_guard_added.log").read_text().split("\n")
    at = next(i for i, ln in enumerate(lines) if '] {"guard_added"' in ln)
    lines.insert(at + 1, lines[at].replace('"prefix": "eval"', '"prefix": "runtime_assert"'))
    log = tmp_path / "guards.log"
    log.write_text("\n".join(lines))
    evaluated = [n for n, m in _records(log) if m.get("guard_added", {}).get("prefix") == "eval"]
    others = [n for n, m in _records(log) if "guard_added" in m and n not in evaluated]
    assert evaluated and others
    kept = [r.line_no for r in scan_log(log).records if r.kind == "guard_added"]
    assert kept == evaluated


def test_slim_kinds_leave_memory_once_read_and_read_back_whole():
    scan = scan_log(TRACE)
    build_rank_model(scan)
    slim = [r for r in scan.records if r.kind in table().slim]
    assert {r.kind for r in slim} >= {"compilation_metrics", "dynamo_start"}
    logged = dict(_records(TRACE))
    for rec in slim:
        assert rec.meta == {}
        assert rec.full_meta() == logged[rec.line_no]
    kept = [
        r
        for r in scan.records
        if r.kind not in table().slim and r.kind in {_kind(m) for m in logged.values()}
    ]
    assert all(r.meta for r in kept)


def test_a_record_of_the_wrong_shape_is_skipped_with_its_line(tmp_path):
    lines = COMP_METRICS.read_text().split("\n")
    start = next(n for n, m in _records(COMP_METRICS) if "dynamo_start" in m)
    lines[start - 1] = (
        lines[start - 1]
        .replace('"stack": [', '"stack": {"x": [', 1)
        .replace('}]}, "frame_id"', '}]}}, "frame_id"', 1)
    )
    log = tmp_path / "bad.log"
    log.write_text("\n".join(lines))
    scan = scan_log(log)
    assert (start, "stack is not a list") in scan.bad
    assert start not in [r.line_no for r in scan.records]
