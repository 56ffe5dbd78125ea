"""One bad record never costs a rank's log; an empty trace is an error; a weird log path never hangs.

Each case edits one record of a real 4-graph trace (data/tiny.log) and runs the real `fxlens report`:
every other graph, break and recompile is still reported, and the note names the line and why.
"""

import json
import os

import pytest
from proc_helpers import fxlens, one_line_error
from trace_edits import PREFIX, edit_json, lines, record, write


def _deep(text):
    # nested far deeper than json's recursion limit: RecursionError, not ValueError
    return text[:3] + [PREFIX + '{"dynamo_start": ' + "[" * 100_000 + "]" * 100_000 + "}"] + text[3:]


def _nul_name(text):
    return text[:1] + [record({"str": ["/a\u0000b.py", 1]})] + text[2:]


def _nul_in_payload(text):  # a graph break whose traceback names a file with a raw NUL byte
    return [x.replace("/nonexistent/model.py", "/a\x00b.py") if x.startswith("\t") else x for x in text]


def _bad_lineno(text):
    return edit_json(
        text, "compilation_metrics", lambda r: r["compilation_metrics"].update(co_firstlineno="x")
    )


def _string_stack(text):
    return edit_json(text, "dynamo_start", lambda r: r.update(dynamo_start={"stack": "oops"}))


CASES = {
    "deep_json": (_deep, "line 4, JSON nested too deeply"),
    "nul_in_file_name": (_nul_name, "line 2, file name holds a NUL byte"),
    "nul_in_payload": (_nul_in_payload, None),  # the name is kept, shown escaped; nothing to skip
    "co_firstlineno_x": (_bad_lineno, "line 82, compilation_metrics.co_firstlineno has the wrong type"),
    "stack_is_a_string": (_string_stack, "line 3, stack is not a list"),
}


@pytest.mark.parametrize("case", CASES)
def test_one_bad_record_is_skipped_and_counted(case, tmp_path):
    edit, note = CASES[case]
    log = write(tmp_path / "r.log", edit(lines()))
    out = tmp_path / "r.json"
    proc = fxlens("report", "--json", out, log)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    # every other graph, break and recompile of the rank is still there
    assert len(report["graphs"]) == 4
    assert sum(b["count"] for b in report["graph_breaks"]) == 2
    assert len(report["recompiles"]) == 2
    if note:
        assert len(report["skipped"]) == 1
        assert report["skipped"][0].startswith(f"r.log: 1 unreadable record skipped: {note}")
        assert f"1 unreadable record skipped: {note}" in proc.stdout
    assert "\x00" not in proc.stdout


def test_many_bad_records_are_listed_with_their_lines(tmp_path):
    text = _string_stack(_bad_lineno(lines()))
    text[10] = "V1203 09:13:19.567000 1 x.py:1] {torn"
    log = write(tmp_path / "r.log", text)
    proc = fxlens("report", log)
    assert proc.returncode == 0, proc.stderr
    assert "3 unreadable records skipped: line 3, stack is not a list; line 11, not JSON" in proc.stdout
    assert "4 graph(s)" in proc.stdout


def test_empty_trace_directory_is_an_error(tmp_path):
    (tmp_path / "a.log").write_text("")
    one_line_error(fxlens("report", tmp_path), "empty trace")


def test_trace_of_only_garbage_is_an_error(tmp_path):
    (tmp_path / "a.log").write_text(PREFIX + "{torn\n")
    one_line_error(fxlens("report", tmp_path), "no readable trace records", "line 1")


def test_trace_with_records_but_no_graphs_is_an_empty_report(tmp_path):
    write(tmp_path / "a.log", [record({"str": ["/a.py", 1]})])
    proc = fxlens("report", tmp_path)
    assert proc.returncode == 0 and "No graphs were compiled." in proc.stdout


def test_log_path_that_is_a_fifo(tmp_path):
    fifo = tmp_path / "trace.log"
    os.mkfifo(fifo)
    # nobody ever writes the FIFO: reading it would block forever
    one_line_error(fxlens("report", fifo, timeout=30), "not a regular file")
    one_line_error(fxlens("report", tmp_path, timeout=30), "not a regular file")


def test_log_path_that_is_a_symlink_to_dev_zero(tmp_path):
    (tmp_path / "trace.log").symlink_to("/dev/zero")
    one_line_error(fxlens("report", tmp_path / "trace.log", timeout=30), "not a regular file")
    one_line_error(fxlens("report", tmp_path, timeout=30), "not a regular file")


def test_log_path_that_is_a_symlink_loop(tmp_path):
    (tmp_path / "a.log").symlink_to(tmp_path / "b.log")
    (tmp_path / "b.log").symlink_to(tmp_path / "a.log")
    one_line_error(fxlens("report", tmp_path / "a.log", timeout=30), "symlink loop")
    one_line_error(fxlens("report", tmp_path, timeout=30))
