"""Gzipped TORCH_TRACE logs (`*.log.gz`): a plain .gz file, and a rank folder of them, read as their
decompressed text is (each through a plain copy made once)."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

from fxlens.report.build import build_report
from fxlens.report.text import render_text
from fxlens.trace.session import Session

DATA = Path(__file__).resolve().parents[1] / "data"


def _report(path: Path) -> dict:
    report = build_report(Session.open(path))
    del report["source"]  # names the log files themselves
    return report


def test_a_gzipped_log_reads_as_its_text(tmp_path):
    gz = DATA / "inductor" / "fused.log.gz"
    plain = tmp_path / "fused.log"
    plain.write_bytes(gzip.decompress(gz.read_bytes()))
    assert _report(gz) == _report(plain)
    assert render_text(build_report(Session.open(gz))) == render_text(build_report(Session.open(plain)))
    assert _report(gz)["graphs"]  # a real compile: the comparison means something


def test_a_rank_folder_of_gzipped_logs_reads_as_their_texts(tmp_path):
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    for gz in (DATA / "ranks").glob("rank_*.log.gz"):
        (ranks / gz.name.removesuffix(".gz")).write_bytes(gzip.decompress(gz.read_bytes()))
    shutil.copy(DATA / "ranks" / "record_gloo.py", ranks)  # the data folder's other file, noted in both
    gz_report, plain_report = _report(DATA / "ranks"), _report(ranks)
    assert gz_report == plain_report
    assert [g["rank"] for g in gz_report["graphs"]].count(1) and [
        g["rank"] for g in gz_report["graphs"]
    ].count(0)
    assert Session.open(DATA / "ranks").logs == Session.open(DATA / "ranks").logs  # the copies are made once


def test_a_gzip_file_that_does_not_decompress(tmp_path):
    data = (DATA / "ranks" / "rank_0.log.gz").read_bytes()
    broken = tmp_path / "rank_0.log.gz"
    broken.write_bytes(data[: len(data) // 2])  # cut short, as an interrupted copy leaves it
    out = subprocess.run(
        [sys.executable, "-m", "fxlens.cli", "report", str(broken)], capture_output=True, text=True
    )
    assert out.returncode != 0
    assert out.stderr.count("\n") == 1 and "not a readable gzip file" in out.stderr
    assert "Traceback" not in out.stderr
    # in a rank folder, the other ranks are read and the broken one is said
    shutil.copy(DATA / "ranks" / "rank_1.log.gz", tmp_path)
    report = json.loads(
        subprocess.run(
            [sys.executable, "-m", "fxlens.cli", "report", "--json", "-", str(tmp_path)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    assert {g["rank"] for g in report["graphs"]} == {1}
    assert any(s.startswith("rank_0.log.gz: ") and "not a readable gzip file" in s for s in report["skipped"])


def test_a_reports_payload_notes_are_its_own_sessions_reads():
    # fused.log.gz holds payloads whose md5 differs from torch's (a cut fixture); a report notes those
    # its session read. Another reader of the same log in this process (the TUI's views, a live
    # status line) reads payloads the report does not: a report of the log opened afterwards must
    # say what the first said, not those reads too
    from fxlens.trace.payloads import corrupt_notes
    from fxlens.trace.reader import scan_log

    gz = DATA / "inductor" / "fused.log.gz"
    first = build_report(Session.open(gz))["skipped"]
    scan = scan_log(gz)
    for rec in scan.records:  # every payload of the log read, as a browser of it would
        if rec.payload_span is not None:
            rec.payload  # noqa: B018 -- the read is what is tested
    # those reads found more than the report's: the case below means something
    assert corrupt_notes([scan.path]) != [n for n in first if "differ from what torch logged" in n]
    assert build_report(Session.open(gz))["skipped"] == first
