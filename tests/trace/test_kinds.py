"""The record-kind table (fxlens.trace.kinds): it knows every kind the fixtures hold, what derives
from it agrees with it, and a kind can be taught from outside fxlens (`register_kind`, or the
`fxlens.record_kinds` entry-point group)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from trace_logged import kind_of, logged_records

from fxlens.trace.kinds import KINDS, table
from fxlens.trace.kindtable import Kind
from fxlens.trace.model import MODEL_LISTS, RankModel
from fxlens.trace.session import Session

DATA = Path(__file__).resolve().parents[1] / "data"
LOG = DATA / "tlparse" / "comp_metrics.log"


def _logged_kinds(path: Path) -> set[str]:
    """The kind of every record line of a log, decoded here without fxlens's reader."""
    return {k for _, meta in logged_records(path) if (k := kind_of(meta))}


FIXTURES = sorted(p for p in DATA.rglob("*") if p.suffix in (".log", ".txt", ".gz") and p.is_file())


@pytest.mark.parametrize("log", FIXTURES, ids=lambda p: str(p.relative_to(DATA)))
def test_the_table_knows_every_kind_the_fixtures_hold(log):
    unknown = sorted(k for k in _logged_kinds(log) if table().get(k) is None)
    assert unknown == [], f"{log.name}: record kinds with no row in fxlens.trace.kinds: {unknown}"


def test_the_fixtures_hold_many_kinds():
    # the test above means something: the fixtures hold most of the table's kinds
    held = set().union(*(_logged_kinds(p) for p in FIXTURES))
    assert len(held) > 70
    assert len({k for k in held if table().get(k) is None}) == 0


def test_each_field_a_row_fills_is_a_list_of_the_model_and_of_the_session():
    fields = {row.field for row in KINDS if row.field}
    model_fields = {f.name for f in dataclasses.fields(RankModel)}
    assert fields <= model_fields and fields <= set(MODEL_LISTS)
    session = Session.open(LOG)
    for name in MODEL_LISTS:
        assert getattr(session, name) == [x for r in session.ranks for x in getattr(r, name)]
    assert session.graphs and session.metrics  # comp_metrics.log's three compiles
    with pytest.raises(AttributeError):
        session.not_a_list  # noqa: B018


def test_a_row_says_how_the_reader_treats_its_kind():
    t = table()
    assert t.get("artifact:torch_dynamo_resume_in_f_at_16_ORIGINAL_BYTECODE").name.endswith(
        "ORIGINAL_BYTECODE"
    )
    assert t.is_graph("artifact:fxlens_aten_joint_graph") and not t.is_graph("artifact:fxlens_ir")
    assert t.label("dynamo_start") is None and t.label("artifact:some_new_thing") == "some_new_thing"
    assert b'{"chromium_event"' in t.skip_prefixes
    assert "compilation_metrics" in t.no_id and "artifact:dynamo_graph_break_reason" not in t.no_id
    with pytest.raises(ValueError, match="already has a row"):
        t.add(Kind("dynamo_start"))
    with pytest.raises(ValueError, match="needs a reader"):
        Kind("acme", field="acme")


PLUGIN = """
from fxlens.trace.kindtable import Kind


def read_note(rec, ctx):
    return {"compile_id": ctx.cid, "text": rec.payload()}


KINDS = [Kind("artifact:acme_note", read_note, dict, "acme_notes", label="acme note")]
"""


def _log_with_note(tmp_path: Path) -> Path:
    """comp_metrics.log with an artifact no fxlens row knows, in compile 0/0 (before its metrics)."""
    lines = LOG.read_text().split("\n")
    prefix = lines[0].split("] ", 1)[0]
    meta = {
        "artifact": {"name": "acme_note", "encoding": "string"},
        "frame_id": 0,
        "frame_compile_id": 0,
        "has_payload": hashlib.md5(b"note one").hexdigest(),
    }
    at = next(i for i, ln in enumerate(lines) if '] {"compilation_metrics"' in ln)
    lines[at:at] = [f"{prefix}] {json.dumps(meta)}", "\tnote one"]
    log = tmp_path / "note.log"
    log.write_text("\n".join(lines))
    return log


def _run(code: str, env: dict | None = None) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_register_kind_reads_an_outside_kind(tmp_path):
    (tmp_path / "acme_kinds.py").write_text(PLUGIN)
    log = _log_with_note(tmp_path)
    code = textwrap.dedent(f"""
        import sys; sys.path.insert(0, {str(tmp_path)!r})
        from fxlens.report.build import build_report
        from fxlens.trace.kinds import register_kind
        from fxlens.trace.session import Session
        from fxlens.tui.loader import artifact_label
        import acme_kinds
        register_kind(acme_kinds.KINDS[0])
        s = Session.open({str(log)!r})
        print(s.extra("acme_notes"), build_report(s)["unknown_records"], artifact_label("artifact:acme_note"))
    """)
    assert _run(code).strip() == "[{'compile_id': '0/0', 'text': 'note one'}] [] acme note"


def test_an_entry_point_registers_kinds_without_code(tmp_path):
    (tmp_path / "acme_kinds.py").write_text(PLUGIN)
    dist = tmp_path / "acme_kinds-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-kinds\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[fxlens.record_kinds]\nacme = acme_kinds:KINDS\n")
    log = _log_with_note(tmp_path)
    report = [sys.executable, "-m", "fxlens.cli", "report", "--json", "-", str(log)]
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    with_plugin = json.loads(
        subprocess.run(report, capture_output=True, text=True, env=env, check=True).stdout
    )
    without = json.loads(subprocess.run(report, capture_output=True, text=True, check=True).stdout)
    assert without["unknown_records"] == [{"kind": "artifact:acme_note", "count": 1, "ranks": [None]}]
    assert with_plugin["unknown_records"] == []
    code = f"from fxlens.trace.session import Session; print(Session.open({str(log)!r}).extra('acme_notes'))"
    assert "note one" in _run(code, env)


def test_a_broken_entry_point_is_said_in_one_line_and_left_out(tmp_path):
    (tmp_path / "acme_kinds.py").write_text("raise ImportError('acme is broken')\n")
    dist = tmp_path / "acme_kinds-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-kinds\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[fxlens.record_kinds]\nacme = acme_kinds:KINDS\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-m", "fxlens.cli", "report", str(LOG)], capture_output=True, text=True, env=env
    )
    assert out.returncode == 0
    assert "fxlens: record kinds of acme (acme_kinds:KINDS) not loaded: acme is broken" in out.stderr
    assert "Traceback" not in out.stderr
