"""Which `fxlens fix` session a report's "measured by fxlens fix" comes from.

`fxlens fix` notes, beside the sessions (`fix-sessions.json`), the fix session that measured a
script's fixes; the report of another session of that script reads the note and never lists the
sessions folder. Sessions made before the note existed are still found, by a bounded scan.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fix_helpers import SCRIPTS

from fxlens.report import measured
from fxlens.report.build import build_report
from fxlens.trace.session import Session

NESTED = Path(__file__).parents[1] / "tui" / "data" / "nested_session"  # a real session, a real trace
FIX = {
    "event": "fix",
    "kind": "mark_dynamic",
    "params": {"name": "x", "dim": 0},
    "verdict": "helps",
    "why": "2 -> 0",
}


def _session(root: Path, name: str, script: Path, events=()) -> Path:
    """A session of SCRIPT named NAME under ROOT (the nested session's trace), with EVENTS."""
    d = root / name
    shutil.copytree(NESTED, d)
    info = json.loads((d / "session.json").read_text())
    (d / "session.json").write_text(json.dumps({**info, "script": str(script)}))
    (d / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    return d


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """(the sessions folder, a script, the listings of the folder made since)."""
    root = tmp_path / "sessions"
    root.mkdir()
    monkeypatch.setenv("FXLENS_SESSIONS_DIR", str(root))
    script = tmp_path / "train.py"
    script.write_text("")
    listed, iterdir = [], Path.iterdir

    def counted(self):
        if self == root:
            listed.append(self)
        return iterdir(self)

    monkeypatch.setattr(Path, "iterdir", counted)
    return root, script, listed


def test_the_report_reads_the_noted_fix_session_without_listing_the_folder(folder):
    root, script, listed = folder
    run = _session(root, "20260101-000000-train", script)
    fixed = _session(root, "20260101-000100-train", script, [FIX])
    measured.record_fix_session(fixed, str(script))
    # a newer fix session nobody noted: a scan would take it (it is the newest), the note does not
    _session(root, "20260101-000200-train", script, [{**FIX, "verdict": "hurts"}])
    report = build_report(Session.open(run))
    assert report["fix_session"] == str(fixed) and listed == []


def test_sessions_from_before_the_note_are_found_by_a_scan(folder):
    root, script, listed = folder
    run = _session(root, "20260101-000000-train", script)
    fixed = _session(root, "20260101-000100-train", script, [FIX])
    _session(root, "20260101-000200-other", root / "other.py", [FIX])  # another script's: skipped
    assert build_report(Session.open(run))["fix_session"] == str(fixed) and listed == [root]
    # a note naming a session that is gone: scanned again, not trusted
    (root / measured.INDEX).write_text(json.dumps({os.path.realpath(script): "20250101-gone"}))
    assert build_report(Session.open(run))["fix_session"] == str(fixed) and len(listed) == 2


def test_only_a_session_in_the_folder_is_noted(folder, tmp_path):
    root, script, _ = folder
    measured.record_fix_session(tmp_path / "elsewhere", str(script))
    assert not (root / measured.INDEX).exists()
    measured.record_fix_session(root / "20260101-000100-train", str(script))
    measured.record_fix_session(root / "20260101-000100-other", str(root / "other.py"))
    assert json.loads((root / measured.INDEX).read_text()) == {
        os.path.realpath(script): "20260101-000100-train",
        os.path.realpath(root / "other.py"): "20260101-000100-other",
    }


@pytest.mark.slow
def test_fxlens_fix_notes_its_session(tmp_path, monkeypatch):
    # a real `fxlens fix` (about 70 s at a load of 9 on 2 cores): its session is noted for its script,
    # and a report of another session of the script shows what it measured without a listing
    root = tmp_path / "sessions"
    script = SCRIPTS / "kw_and_item.py"
    env = {**os.environ, "FXLENS_SESSIONS_DIR": str(root)}
    cmd = [sys.executable, "-m", "fxlens.cli", "fix", str(script)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (fixed,) = [d for d in root.iterdir() if d.is_dir()]
    assert json.loads((root / measured.INDEX).read_text()) == {os.path.realpath(script): fixed.name}
    run = root / "20000101-000000-kw_and_item"  # the first run alone, as `fxlens run` leaves it
    shutil.copytree(fixed, run, ignore=shutil.ignore_patterns("fix-*"))
    events = [e for e in Session.open(fixed).events if not e.get("event", "").startswith("fix")]
    (run / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    monkeypatch.setenv("FXLENS_SESSIONS_DIR", str(root))
    iterdir = Path.iterdir
    monkeypatch.setattr(
        Path, "iterdir", lambda self: pytest.fail("listed") if self == root else iterdir(self)
    )
    report = build_report(Session.open(run))
    (cause,) = report["recompile_causes"]
    assert report["fix_session"] == str(fixed) and cause["measured"][0]["verdict"] == "helps"
