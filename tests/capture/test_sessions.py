"""Sessions robust to the script (issue 20.6): real `fxlens run` processes on real scripts."""

import contextlib
import json
import re
import subprocess
from pathlib import Path

import pytest
from capture_helpers import fxlens

REPRO = Path(__file__).resolve().parents[2] / "repro_cases"

BREAK_SCRIPT = """\
import torch


@torch.compile(backend="eager")
def f(x):
    y = x.sin()
    print("the break")
    return y + 1


f(torch.randn(4))
"""


def _one_line_error(proc, *needles) -> str:
    assert proc.returncode != 0, proc.stdout[-2000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("fxlens "), proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr[-2000:]
    for n in needles:
        assert n in last, last
    return last


@pytest.fixture(scope="module")
def chdir_run(tmp_path_factory):
    """`fxlens run` (default, relative session path) of the script that chdirs before compiling."""
    cwd = tmp_path_factory.mktemp("chdir")
    out = cwd / "r.json"
    proc = fxlens(
        "run",
        "--json",
        out,
        REPRO / "fixed_run_chdir_before_compile.py",
        cwd=cwd,
        env={"FXLENS_SESSIONS_DIR": ".fxlens/sessions"},
    )
    (session,) = (cwd / ".fxlens" / "sessions").iterdir()
    return proc, json.loads(out.read_text()) if out.exists() else None, session


def test_script_that_changes_directory_still_writes_into_the_session(chdir_run):
    proc, report, session = chdir_run
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert [g["function"] for g in report["graphs"]] == ["after_chdir"]
    assert "No graphs were compiled" not in proc.stdout
    assert list((session / "trace").glob("*.log"))
    # and the runner's own events (compile calls) landed there too
    assert '"compile_call"' in (session / "events.jsonl").read_text()


def test_a_used_session_is_refused_never_merged(chdir_run, tmp_path):
    _, _, session = chdir_run
    logs = sorted((session / "trace").glob("*.log"))
    proc = fxlens("run", "--session", session, REPRO / "fixed_run_chdir_before_compile.py")
    _one_line_error(proc, str(session), "already holds a session", "--session")
    assert proc.returncode == 2
    assert sorted((session / "trace").glob("*.log")) == logs  # nothing was run into it
    # an empty directory is fine: test_quiet_prints_nothing_but_errors runs into one


def test_quiet_prints_nothing_but_errors(tmp_path):
    script = tmp_path / "silent.py"
    script.write_text(BREAK_SCRIPT.replace('print("the break")', "torch._dynamo.graph_break()"))
    # into an empty directory (mkdtemp, a CI artifact folder): not a used session, so no refusal
    (tmp_path / "s").mkdir()
    proc = fxlens("run", "--quiet", "--session", tmp_path / "s", script)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout == "" and proc.stderr == "", (proc.stdout, proc.stderr)
    assert list((tmp_path / "s" / "trace").glob("*.log"))  # the session is written all the same


def test_source_lines_are_the_run_times_and_the_hint_is_shell_quoted(tmp_path):
    script = tmp_path / "model.py"
    script.write_text(BREAK_SCRIPT)
    session = tmp_path / "my session"  # a space: the printed command must still paste
    proc = fxlens("run", "--session", session, script)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"fxlens report '{session}'" in proc.stdout, proc.stdout[-1000:]
    kept = json.loads((session / "sources.json").read_text())["files"][str(script)]
    assert kept["lines"]["7"] == '    print("the break")'
    # the user edits the file: the report shows the line as it was when it ran, and says so
    script.write_text(BREAK_SCRIPT.replace('print("the break")', 'print("edited")'))
    rep = fxlens("report", session)
    assert rep.returncode == 0, rep.stderr
    assert 'model.py:7  print("the break")' in rep.stdout, rep.stdout
    assert "edited" not in rep.stdout
    assert "model.py changed since the run: its lines are shown as they were when it ran" in rep.stdout
    # a torn sources.json is data, not a crash: lines come from disk again
    (session / "sources.json").write_text('{"files": {"x": [')
    rep = fxlens("report", session)
    assert rep.returncode == 0 and 'print("edited")' in rep.stdout, rep.stderr


def test_more_than_20_break_sites_are_announced(tmp_path):
    script = REPRO / "fixed_report_many_break_sites.py"
    out = tmp_path / "r.json"
    proc = fxlens("run", "--json", out, "--session", tmp_path / "s", script)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert len(json.loads(out.read_text())["graph_breaks"]) == 23
    assert "... 3 more break site(s) (see --json)" in proc.stdout, proc.stdout


def test_sigint_to_the_script_alone_exits_130_as_python_does(tmp_path):
    script = REPRO / "fixed_run_script_interrupts_itself.py"
    proc = fxlens("run", "--session", tmp_path / "s", script)
    assert proc.returncode == 130, proc.stderr[-2000:]
    assert "KeyboardInterrupt" in proc.stderr  # the script's traceback, as python shows it
    assert "the script was killed by SIGINT" in proc.stdout
    # before compiling anything: the one-line error, the same status
    early = tmp_path / "early.py"
    early.write_text("import os, signal, time\nos.kill(os.getpid(), signal.SIGINT)\ntime.sleep(30)\n")
    proc = fxlens("run", "--session", tmp_path / "s2", early)
    assert proc.returncode == 130
    last = proc.stderr.strip().splitlines()[-1]  # (above it: the script's own KeyboardInterrupt)
    assert last.startswith("fxlens run: error: ") and "killed by SIGINT before compiling anything" in last


@contextlib.contextmanager
def _read_only(folder: Path):
    """FOLDER bind-mounted read-only onto itself (root ignores file modes); skipped where mounting
    is not permitted."""
    folder.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["mount", "--bind", str(folder), str(folder)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount here: {proc.stderr.strip()}")
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(folder)], check=True)
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def test_default_session_in_a_read_only_directory(tmp_path):
    script = tmp_path / "model.py"
    script.write_text(BREAK_SCRIPT)
    with _read_only(tmp_path / "ro") as ro:
        proc = fxlens("run", script, cwd=ro, env={"FXLENS_SESSIONS_DIR": ".fxlens/sessions"})
    last = _one_line_error(proc, ".fxlens/sessions/", "cannot create the session directory", "--session DIR")
    assert re.search(r"Read-only file system|Permission denied", last), last
    assert proc.returncode == 2


def test_the_users_own_torch_trace_is_honoured(tmp_path):
    # issue 34: a script's own TORCH_TRACE was silently not written under `fxlens run`
    script = Path(__file__).parent / "scripts" / "own_trace.py"
    mine = tmp_path / "mine"
    proc = fxlens("run", "--json", tmp_path / "r.json", "--session", tmp_path / "s", script, mine)
    assert proc.returncode == 0, proc.stderr[-2000:]
    torch_count = int(proc.stdout.split("unique_graphs:")[1].split()[0])  # torch's own count
    assert list(mine.glob("*.log"))  # the script's trace folder holds this run's log
    report = json.loads((tmp_path / "r.json").read_text())
    assert len(report["graphs"]) == torch_count == 1 and report["source"]["torch_trace"] == str(mine)
    # TORCH_TRACE set before fxlens runs: torch writes there, fxlens reads the same run
    small = tmp_path / "small.py"
    small.write_text("import torch\ntorch.compile(lambda x: x + 1, backend='eager')(torch.ones(2))\n")
    theirs = tmp_path / "theirs"
    proc = fxlens("run", "--session", tmp_path / "s2", small, env={"TORCH_TRACE": str(theirs)})
    assert proc.returncode == 0 and "1 graph(s)" in proc.stdout, proc.stderr[-2000:]
    assert [p.name for p in theirs.glob("*.log")] == [
        p.name for p in (tmp_path / "s2" / "trace").glob("*.log")
    ]
