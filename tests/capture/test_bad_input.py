"""Bad input: a one-line error and a non-zero exit, never an fxlens traceback; partial logs are data."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from capture_helpers import SCRIPTS, fxlens


def _one_line_error(proc, *needles):
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("fxlens "), proc.stderr[-2000:]
    for n in needles:
        assert n in last
    # fxlens's own frames never show up in a traceback
    assert "toolkit/" not in proc.stderr and "fxlens/cli.py" not in proc.stderr


def test_missing_script(tmp_path):
    _one_line_error(fxlens("run", tmp_path / "nope.py"), "nope.py", "no such script")


def test_script_that_raises_before_compiling(tmp_path, sessions_root):
    script = tmp_path / "boom.py"
    script.write_text("import torch\nraise ValueError('boom')\n")
    proc = fxlens("run", script)
    _one_line_error(proc, "before compiling anything")
    assert proc.returncode == 1  # the script's own status
    assert "ValueError: boom" in proc.stderr  # the user's traceback is shown, as Python would


def test_script_that_raises_after_compiling_keeps_the_capture(run_report):
    # the same run as test_backend_override_applies_to_every_compile (one run of the script, not two)
    proc, report = run_report("raises_late", "--backend", "aot_eager")
    assert proc.returncode == 7
    assert [(g["function"], g["line"]) for g in report["graphs"]] == [("f", 8)]
    assert "exited with status 7" in proc.stdout


def test_unknown_backend(sessions_root, cli_in_process):
    # the CLI's `main` in this process: the refusal imports torch, which this process has already
    rc, out, err = cli_in_process("run", "--backend", "no_such_backend", SCRIPTS / "limit.py")
    _one_line_error(subprocess.CompletedProcess([], rc, out, err), "unknown backend")


def test_backend_override_applies_to_every_compile(run_report):
    proc, report = run_report("raises_late", "--backend", "aot_eager")
    assert proc.returncode == 7
    # aot_eager runs AOTAutograd: the trace now holds an ATen graph for the compile
    assert report["graphs"] and report["source"]["backend"] == "aot_eager"


@pytest.mark.parametrize("make", ["missing", "empty_dir", "empty_file", "not_a_trace"])
def test_report_on_bad_paths(tmp_path, make):
    target = tmp_path / "x"
    if make == "empty_dir":
        target.mkdir()
    elif make == "empty_file":
        target.write_text("")
    elif make == "not_a_trace":
        target.write_text("hello\nworld\n")
    _one_line_error(fxlens("report", target), str(target))


def _plain_trace(d):
    env = {**os.environ, "TORCH_TRACE": str(d)}
    subprocess.run([sys.executable, str(SCRIPTS / "storm.py")], env=env, check=True, capture_output=True)


@pytest.fixture(scope="module")
def real_log(build_once):
    """A TORCH_TRACE log written by plain python (no fxlens) running a script with breaks."""
    (log,) = build_once("plain_trace", _plain_trace).glob("*.log")
    return log


def test_report_on_trace_without_fxlens(real_log, tmp_path):
    out = tmp_path / "r.json"
    for path in (real_log.parent, real_log):  # a TORCH_TRACE directory, and the single log file
        proc = fxlens("report", path, "--json", out)
        assert proc.returncode == 0, proc.stderr
        report = json.loads(out.read_text())
        assert len(report["recompiles"]) == 4 and report["skipped"] == []
        assert report["recompile_causes"][0]["values"] == ["8", "5", "3"]


def test_truncated_and_corrupt_logs_report_what_is_readable(real_log, tmp_path):
    data = real_log.read_bytes()
    lines = data.split(b"\n")
    # corrupt two record lines in the middle, then cut the file in the middle of a payload
    idx = [i for i, ln in enumerate(lines) if ln[:1] in b"VIWE" and b"chromium_event" not in ln]
    lines[idx[5]] = b"V1202 10:00:00.000000 1 x.py:1] {not json"
    lines[idx[6]] = b"\x00\xffgarbage"
    cut = next(i for i in idx if b"recompile_reasons" in lines[i])
    bad = tmp_path / "bad.log"
    bad.write_bytes(b"\n".join(lines[: cut + 1]) + b"\n")  # the record line, without its payload
    out = tmp_path / "r.json"
    proc = fxlens("report", bad, "--json", out)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert report["graphs"], "what was readable is still reported"
    notes = " ".join(report["skipped"])
    assert "3 unreadable records skipped" in notes and "not JSON" in notes and "no payload" in notes
    assert "note: " in proc.stdout


def test_torn_last_line_is_tolerated(real_log, tmp_path):
    data = real_log.read_bytes()
    torn = tmp_path / "torn.log"
    torn.write_bytes(data + b'V1202 10:00:00.000000 1 x.py:1] {"dynamo_start": {"sta')
    proc = fxlens("report", torn)
    assert proc.returncode == 0 and "1 unreadable record skipped" in proc.stdout


def test_session_events_torn_line(tmp_path):
    from fxlens.trace.session import append_event, read_events

    append_event(tmp_path, "bisect", {"summary": "ok"})
    with open(tmp_path / "events.jsonl", "a") as f:
        f.write('{"event": "minify", "rep')
    events, skipped = read_events(Path(tmp_path) / "events.jsonl")
    assert [e["event"] for e in events] == ["bisect"] and "1 unreadable" in skipped[0]


def test_report_prints_guards_per_compile_id(real_log):
    proc = fxlens("report", real_log, "--guards")
    assert proc.returncode == 0
    assert "Guards of 0/0 (" in proc.stdout and "TENSOR_MATCH" in proc.stdout


def test_decorator_form_recorded_once_at_the_user_line(tmp_path):
    script = tmp_path / "deco.py"
    script.write_text(
        "import torch\n\n@torch.compile(backend='eager')\ndef f(x):\n    return x + 1\n\nf(torch.ones(2))\n"
    )
    sessions = tmp_path / "sessions"
    proc = fxlens("run", "--backend", "aot_eager", script, env={"FXLENS_SESSIONS_DIR": str(sessions)})
    assert proc.returncode == 0, proc.stderr
    (session,) = sessions.iterdir()
    events = [json.loads(x) for x in (session / "events.jsonl").read_text().splitlines()]
    calls = [e for e in events if e["event"] == "compile_call"]  # the run also records its environment
    assert [(c["backend"], c["file"], c["line"], c["override"]) for c in calls] == [
        ("eager", str(script), 3, True)
    ]
