"""A trace cut mid-record (a job killed while torch wrote it) is said to be truncated, and a diff
against it fails as a failed run does.

Ground truth: the record layout of two real logs (tiny.log and tlparse's simple.log, with a
chromium_event record the reader never decodes), found here by reading their lines, not by the
reader: cutting a log at the end of a record leaves complete records (not truncated); cutting
inside a record line, or between its payload lines, leaves that record short.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from proc_helpers import fxlens
from schema_check import validate
from trace_edits import TINY

from fxlens.trace.reader import scan_log

SIMPLE = Path(__file__).resolve().parents[1] / "data" / "tlparse" / "simple.log"


def _records(data: bytes) -> list[tuple[int, int, int, int]]:
    """(line number, start, end of its own line, end of its payload) of each record line."""
    out, offset = [], 0
    for n, line in enumerate(data.splitlines(keepends=True), 1):
        if line.startswith(b"\t") and out:
            out[-1] = (*out[-1][:3], offset + len(line))
        elif line.strip():
            out.append((n, offset, offset + len(line), offset + len(line)))
        offset += len(line)
    return out


def _cut(tmp_path: Path, data: bytes, at: int) -> Path:
    p = tmp_path / "cut.log"
    p.write_bytes(data[:at])
    return p


@pytest.mark.parametrize("log", [TINY, SIMPLE], ids=["tiny", "tlparse_simple"])
def test_every_cut_inside_a_record_is_truncated_and_every_cut_between_records_is_not(tmp_path, log):
    data = log.read_bytes()
    assert scan_log(log).truncated is None  # the whole log (simple.log has no final newline)
    recs = _records(data)
    with_payload = 0
    for n, start, line_end, end in recs:
        assert scan_log(_cut(tmp_path, data, end)).truncated is None, f"cut after record {n}"
        mid_line = scan_log(_cut(tmp_path, data, (start + line_end) // 2))
        assert mid_line.truncated == n, f"cut inside record line {n}"
        assert any("is truncated: it ends mid-record" in s for s in mid_line.notes)
        if end - line_end > 2:  # a payload: cut inside its first line, and after it when it has more
            with_payload += 1
            assert scan_log(_cut(tmp_path, data, line_end + 2)).truncated == n, f"payload of {n}"
            first_payload_line = data.index(b"\n", line_end) + 1
            if first_payload_line < end:
                assert scan_log(_cut(tmp_path, data, first_payload_line)).truncated == n
    assert len(recs) > 20 and with_payload > 5  # the sweep covered real records of both shapes


def test_a_torn_line_that_is_not_the_end_is_corrupt_not_truncated(tmp_path):
    # a garbled line in the middle, ending with its newline: skipped and said, but nothing is cut
    text = TINY.read_text().split("\n")
    i = [k for k, ln in enumerate(text) if ln and not ln.startswith("\t")][len(text) // 20]
    text[i] = text[i][: len(text[i]) // 2]
    p = tmp_path / "mid.log"
    p.write_text("\n".join(text))
    scan = scan_log(p)
    assert scan.truncated is None and scan.bad


@pytest.fixture(scope="module")
def cut_log(tmp_path_factory) -> tuple[Path, Path, int]:
    """tiny.log whole, and cut in the middle of its last compilation_metrics record line."""
    d = tmp_path_factory.mktemp("cut")
    data = TINY.read_bytes()
    full = d / "full.log"
    full.write_bytes(data)
    (n, start, line_end, _) = [r for r in _records(data) if b'"compilation_metrics"' in data[r[1] : r[2]]][-1]
    cut = d / "cut.log"
    cut.write_bytes(data[: (start + line_end) // 2])
    return full, cut, n


def test_report_says_truncated_in_text_and_json(cut_log, tmp_path):
    full, cut, line = cut_log
    proc = fxlens("report", cut, "--json", tmp_path / "r.json")
    assert proc.returncode == 0, proc.stderr  # a cut trace is still data (DESIGN: exit 0)
    head = proc.stdout.split("\n\n")[1]  # the headline comes right after the counts line
    assert f"truncated trace: cut.log (line {line}) ends mid-record" in head, proc.stdout[:800]
    report = json.loads((tmp_path / "r.json").read_text())
    validate("report", report)
    assert report["truncated"] == [{"log": "cut.log", "rank": None, "line": line}]
    assert report["headlines"][0]["kind"] == "truncated"
    whole = json.loads(fxlens("report", full, "--json", "-").stdout)
    assert whole["truncated"] == [] and not any(h["kind"] == "truncated" for h in whole["headlines"])
    # what precedes the cut is read: every graph (logged before the last compile's metrics)
    ids = [(g["compile_id"], g["function"]) for g in report["graphs"]]
    assert ids == [(g["compile_id"], g["function"]) for g in whole["graphs"]] and len(ids) == 4


def test_diff_against_a_truncated_side_fails_unless_allowed(cut_log, tmp_path):
    full, cut, line = cut_log
    proc = fxlens("diff", full, cut)
    assert proc.returncode == 1, proc.stdout
    assert f"B FAILED: its trace ends mid-record (cut.log, line {line})" in proc.stdout
    assert "no worse" not in proc.stdout
    allowed = fxlens("diff", "--allow-failed", full, cut, "--json", tmp_path / "d.json")
    assert allowed.returncode == 0, allowed.stdout  # B has fewer of everything: "better" when allowed
    diff = json.loads((tmp_path / "d.json").read_text())
    validate("diff", diff)
    assert "mid-record" in diff["failed"]["b"] and diff["failed"]["a"] is None
    # a saved report of the cut log is the same failed side (a CI baseline kept as JSON)
    fxlens("report", cut, "--json", tmp_path / "cut.json")
    assert fxlens("diff", tmp_path / "cut.json", full).returncode == 1
    assert fxlens("diff", full, full).returncode == 0
