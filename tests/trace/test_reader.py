"""The TORCH_TRACE log reader itself (fxlens.trace.reader), on logs torch wrote (tests/data) and on
copies of them edited the way logs break: each record's envelope, a row's reader filling its model
list, a torn last line, a log cut inside its last payload, payloads that differ from the md5 torch
logged, kinds no row knows, kinds skipped unread (never decoded) and kinds slimmed. The ground
truth is each line decoded here (trace_logged.py), not by the reader."""

from __future__ import annotations

import hashlib
from pathlib import Path

from trace_logged import kind_of, logged_records

from fxlens.trace.kinds import table
from fxlens.trace.model import build_rank_model
from fxlens.trace.payloads import corrupt_notes
from fxlens.trace.reader import GLOG_PREFIX, scan_log

DATA = Path(__file__).resolve().parents[1] / "data"
COMP_METRICS = DATA / "tlparse" / "comp_metrics.log"  # torch 2.3: restarts (attempt 1), JSON guards
TRACE = DATA / "traces" / "2.15.0" / "dedicated_log_torch_trace.log"


def test_each_record_keeps_its_kind_compile_id_and_payload_as_logged():
    scan = scan_log(COMP_METRICS)
    logged = {n: m for n, m in logged_records(COMP_METRICS) if kind_of(m) != "str"}
    assert [r.line_no for r in scan.records] == list(logged)
    for rec in scan.records:
        meta = logged[rec.line_no]
        assert rec.kind == kind_of(meta)
        if "frame_id" in meta:
            attempt = f"_{meta['attempt']}" if meta.get("attempt") else ""
            assert str(rec.compile_id) == f"{meta['frame_id']}/{meta['frame_compile_id']}{attempt}"
        if "has_payload" in meta:  # the payload read back from disk hashes to torch's md5 of it
            assert hashlib.md5(rec.payload().encode()).hexdigest() == meta["has_payload"]
    assert scan.pid == int(GLOG_PREFIX.match(COMP_METRICS.read_bytes()).group(1))
    # the interned file names, as the `str` records list them
    assert scan.strings == {m["str"][1]: m["str"][0] for _, m in logged_records(COMP_METRICS) if "str" in m}
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
    graph = next(n for n, m in logged_records(COMP_METRICS) if "dynamo_output_graph" in m)
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


def test_kinds_skipped_unread_never_becomelogged_records():
    log = DATA / "tlparse" / "simple.log"
    skipped = {row.name for row in table() if row.skip}
    logged = {kind_of(m) for _, m in logged_records(log)}
    assert "chromium_event" in skipped & logged  # the log holds some: the test means something
    assert not {r.kind for r in scan_log(log).records} & skipped


def test_guard_added_is_read_only_when_export_evaluated_it(tmp_path):
    # export_guard_added.log's one guard export evaluated, and a copy torch logs as a runtime assert
    lines = (DATA / "tlparse" / "export_guard_added.log").read_text().split("\n")
    at = next(i for i, ln in enumerate(lines) if '] {"guard_added"' in ln)
    lines.insert(at + 1, lines[at].replace('"prefix": "eval"', '"prefix": "runtime_assert"'))
    log = tmp_path / "guards.log"
    log.write_text("\n".join(lines))
    evaluated = [n for n, m in logged_records(log) if m.get("guard_added", {}).get("prefix") == "eval"]
    others = [n for n, m in logged_records(log) if "guard_added" in m and n not in evaluated]
    assert evaluated and others
    kept = [r.line_no for r in scan_log(log).records if r.kind == "guard_added"]
    assert kept == evaluated


def test_slim_kinds_leave_memory_once_read_and_read_back_whole():
    scan = scan_log(TRACE)
    build_rank_model(scan)
    slim = [r for r in scan.records if r.kind in table().slim]
    assert {r.kind for r in slim} >= {"compilation_metrics", "dynamo_start"}
    logged = dict(logged_records(TRACE))
    for rec in slim:
        assert rec.meta == {}
        assert rec.full_meta() == logged[rec.line_no]
    kept = [
        r
        for r in scan.records
        if r.kind not in table().slim and r.kind in {kind_of(m) for m in logged.values()}
    ]
    assert all(r.meta for r in kept)


def test_a_record_of_the_wrong_shape_is_skipped_with_its_line(tmp_path):
    lines = COMP_METRICS.read_text().split("\n")
    start = next(n for n, m in logged_records(COMP_METRICS) if "dynamo_start" in m)
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


def test_a_row_s_reader_fills_its_model_list_with_its_record_type_as_logged():
    # the row of `artifact:recompile_reasons`: read into Recompile records in the model's
    # `recompiles`, each at the frame its compile's dynamo_start names
    row = table().get("artifact:recompile_reasons")
    records = logged_records(TRACE)
    logged = [(n, m) for n, m in records if kind_of(m) == row.name]
    assert len(logged) >= 2
    lines = TRACE.read_text().split("\n")
    strings = {m["str"][1]: m["str"][0] for _, m in records if "str" in m}
    starts = {
        (m["frame_id"], m["frame_compile_id"]): m["dynamo_start"] for _, m in records if "dynamo_start" in m
    }
    model = build_rank_model(scan_log(TRACE))
    got = getattr(model, row.field)
    assert [type(r) for r in got] == [row.record] * len(logged)
    for rec, (n, meta) in zip(got, logged, strict=True):
        frame = starts[(meta["frame_id"], meta["frame_compile_id"])]["stack"][-1]
        assert rec.compile_id == f"{meta['frame_id']}/{meta['frame_compile_id']}"
        assert (rec.function, rec.line, rec.file) == (
            frame["name"],
            frame["line"],
            strings[frame["filename"]],
        )
        assert rec.failed_guards == (lines[n].strip(),)  # the payload's one line, as logged


def test_a_skipped_kind_is_never_decoded(tmp_path):
    # a broken line of a kind the reader skips unread costs nothing; of a kind it reads, it is said
    log = DATA / "tlparse" / "simple.log"
    lines = log.read_text().split("\n")
    records = logged_records(log)
    skipped = next(n for n, m in records if kind_of(m) == "chromium_event")
    read = next(n for n, m in records if kind_of(m) == "dynamo_start")
    for n in (skipped, read):
        lines[n - 1] = lines[n - 1][:-5] + "{{{{{"
    broken = tmp_path / "broken.log"
    broken.write_text("\n".join(lines))
    whole, scan = scan_log(log), scan_log(broken)
    assert [n for n, _ in scan.bad] == [read]
    assert [r.line_no for r in scan.records] == [r.line_no for r in whole.records if r.line_no != read]


def test_a_log_cut_inside_its_last_payload_is_truncated_and_the_rest_is_read(tmp_path):
    # cut at a line boundary, inside the payload of a record: every line decodes, the payload is short
    lines = COMP_METRICS.read_text().split("\n")
    graph = next(n for n, m in logged_records(COMP_METRICS) if "dynamo_output_graph" in m)
    assert lines[graph].startswith("\t") and lines[graph + 1].startswith("\t")  # a payload of 2+ lines
    cut = tmp_path / "cut.log"
    cut.write_text("\n".join(lines[: graph + 1]) + "\n")  # the record line and its first payload line
    whole, scan = scan_log(COMP_METRICS), scan_log(cut)
    assert scan.truncated == graph
    assert scan.notes[0].startswith(f"cut.log is truncated: it ends mid-record (line {graph})")
    before = [r.line_no for r in whole.records if r.line_no < graph]
    assert [r.line_no for r in scan.records if r.line_no < graph] == before
    assert not whole.truncated and not any("truncated" in note for note in whole.notes)
