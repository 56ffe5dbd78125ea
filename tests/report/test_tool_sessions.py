"""`fxlens report` on minify and unfinished bisect sessions, laid out as those commands write them
(a real bisect session: tests/bisect/test_bisect_session_report.py), and the text report's cuts."""

import json
from pathlib import Path

import pytest

from fxlens.cli import main
from fxlens.report.text import render_text
from fxlens.trace.sanitize import clip


def _report(capsys, *args):
    capsys.readouterr()
    rc = main([str(a) for a in args])
    out = capsys.readouterr()
    return rc, out.out, out.err


def _session(root: Path, command: str, events: list, runs: dict) -> Path:
    root.mkdir()
    (root / "session.json").write_text(json.dumps({"script": "/w/train.py", "argv": [], "command": command}))
    (root / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    for name, info in runs.items():
        (root / name).mkdir(parents=True)
        (root / name / "session.json").write_text(json.dumps(info))
    return root


MINIFY_EVENT = {
    "event": "minify",
    "repro": "/w/repro_cases/repro_1.py",
    "reproduced": "3/3",
    "check": "crash",
    "signature": "RuntimeError: boom",
    "original_nodes": 12,
    "final_nodes": 1,
    "queries": 5,
    "seconds": 4.2,
    "summary": "12 -> 1 nodes in 5 queries, 4.2s; crash: RuntimeError: boom; reproduced 3/3 fresh runs",
}


def test_minify_session(tmp_path, capsys):
    s = _session(
        tmp_path / "m", "minify", [MINIFY_EVENT], {"children/capture": {"exit_code": 1, "seconds": 2.5}}
    )
    rc, out, err = _report(capsys, "report", "--json", tmp_path / "r.json", s)
    assert rc == 0, err
    assert "a minify session of /w/train.py, 1 run(s)" in out
    assert f"verdict: {MINIFY_EVENT['summary']}" in out and "python /w/repro_cases/repro_1.py" in out
    assert "children/capture  exit 1" in out
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["graphs"] == [] and report["verdict"]["signature"] == "RuntimeError: boom"


def test_unfinished_bisect_session(tmp_path, capsys):
    s = _session(tmp_path / "b", "bisect", [], {"runs/01-as-asked": {"exit_code": 1}, "runs/02-eager": {}})
    rc, out, err = _report(capsys, "report", s)
    assert rc == 0, err
    assert "verdict: none recorded: the bisect did not finish" in out
    assert "runs/02-eager" in out and "did not finish" in out


@pytest.mark.parametrize("event", [{"event": "bisect", "stages": 5}, {"event": "bisect", "summary": ["x"]}])
def test_hostile_verdict_event_is_not_a_crash(tmp_path, capsys, event):
    s = _session(tmp_path / "b", "bisect", [event], {})
    rc, out, err = _report(capsys, "report", s)
    assert rc == 0, err
    assert "verdict: recorded, but unreadable" in out


def _report_dict(**over) -> dict:
    base = {
        "ranks": [None],
        "graphs": [],
        "graph_breaks": [],
        "recompiles": [],
        "recompile_causes": [],
        "recompile_limit_hits": [],
        "failures": [],
        "compile_times": {"total_s": 0, "per_compile": []},
        "kernels": [],
        "fallbacks": [],
        "divergence": [],
        "events": [],
        "skipped": [],
    }
    return {**base, **over}


HINT = (
    "Your code may result in an error when running in eager. Please double check that your code "
    "doesn't contain a similar error when actually running eager/uncompiled. You can do this by "
    'removing the `torch.compile` call, or by using `torch.compiler.set_stance("force_eager")`. '
)


def test_hints_are_cut_at_a_word_with_an_ellipsis():
    brk = {
        "count": 1,
        "file": "/w/m.py",
        "line": 3,
        "function": "f",
        "reason": "a reason " * 20,
        "source": "x",
        "call_path": [],
        "explanation": "",
        "hints": [HINT],
    }
    text = render_text(_report_dict(graph_breaks=[brk]))
    hint = next(ln for ln in text.splitlines() if "hint:" in ln)
    assert hint.endswith("by removing the...") and "`torc" not in hint, hint
    assert clip("hello world foobar", 15) == "hello world..." and clip("short", 10) == "short"


def test_every_cut_is_announced():
    per = [
        {
            "compile_id": f"{i}/0",
            "rank": None,
            "function": "f",
            "total_s": 0.1,
            "backend_s": 0,
            "guard_count": 1,
        }
        for i in range(7)
    ]
    kernels = [
        {"compile_id": "0/0", "name": f"k{i}", "ops": [], "bytes_read": 1, "bytes_written": 1}
        for i in range(25)
    ]
    text = render_text(_report_dict(compile_times={"total_s": 0.7, "per_compile": per}, kernels=kernels))
    assert "slowest 5 (all: see --json):" in text
    assert "... 5 more kernel(s) (see --json)" in text


def test_tui_minify_view_shows_no_missing_fields():
    from fxlens.tui.view_results import _minify

    lines = _minify({"event": "minify", "repro": "/w/r.py", "check": "crash", "interrupted": True})
    assert not any("None" in ln for ln in lines), lines
    assert "→" not in "".join(lines)
