"""Breaks of one user line that happen in two libraries' files stay two breaks, each under its own
library frame (ground truth: the script's two library files, and torch's own break records)."""

from capture_helpers import SCRIPTS

from fxlens.trace.session import Session

SCRIPT = str(SCRIPTS / "two_library_breaks.py")


def test_one_user_line_two_library_files_two_breaks(run_report, sessions_root):
    proc, report = run_report("two_library_breaks")
    assert proc.returncode == 0, proc.stderr[-2000:]
    mine = [b for b in report["graph_breaks"] if b["file"] == SCRIPT]
    assert {b["line"] for b in mine} == {27}  # the one user line that calls both libraries
    by_lib = {b["library"]["file"]: b for b in mine}
    assert set(by_lib) == {"lib_enc.py", "lib_loss.py"}, [b["library"] for b in mine]
    assert by_lib["lib_enc.py"]["library"]["function"] == "encode"
    assert by_lib["lib_loss.py"]["library"]["function"] == "loss"
    # torch's records, read raw: each compile id's break is in the file the report files it under
    (session,) = [p for p in sessions_root.iterdir() if "two_library_breaks" in p.name]
    raw = {b.compile_id: b.library.file for b in Session.open(session).graph_breaks if b.library}
    for lib, b in by_lib.items():
        assert b["count"] == len(b["compile_ids"]) >= 1
        assert {raw[c] for c in b["compile_ids"]} == {lib}
    assert sum(b["count"] for b in mine) == len(raw)
    # the text table names the library frame beside each row
    table = proc.stdout.split("Graph breaks")[1].split("\n\n")[0]
    assert "in lib_enc.py:6" in table and "in lib_loss.py:6" in table
