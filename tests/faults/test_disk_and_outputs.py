"""Where a session is written or read, and where results go: a full disk, a read-only session, two
runs into one --session, and output paths that cannot be written.
"""

import asyncio
import contextlib
import json
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
from proc_helpers import fxlens, no_orphans, one_line_error, start, wait_for
from trace_edits import TINY

SCRIPTS = Path(__file__).parent / "scripts"


@contextlib.contextmanager
def _mounted(target: Path, *args: str):
    """`mount ARGS target` for the test (skipped where mounting is not permitted), unmounted after."""
    target.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["mount", *args, str(target)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount here: {proc.stderr.strip()}")
    try:
        yield target
    finally:
        subprocess.run(["umount", "-l", str(target)], capture_output=True)


def _session_of_tiny(d: Path) -> Path:
    (d / "trace").mkdir(parents=True)
    shutil.copy(TINY, d / "trace" / "dedicated_log_torch_trace_x.log")
    (d / "session.json").write_text(json.dumps({"script": "model.py", "exit_code": 0}))
    return d


@pytest.mark.slow  # ~30 s here: the script imports torch and compiles
def test_full_disk_while_the_session_is_written(tmp_path):
    with _mounted(tmp_path / "full", "-t", "tmpfs", "-o", "size=64k", "tmpfs") as mnt:
        session = mnt / "s"
        proc = fxlens("run", "--session", session, SCRIPTS / "breaks_once.py")
        # one line naming the problem, exit 2; never "internal error". Above it, torch's failed
        # trace writes are said once (they were thousands of "--- Logging error ---" tracebacks)
        last = proc.stderr.strip().splitlines()[-1]
        assert "Logging error" not in proc.stderr and len(proc.stderr.splitlines()) < 20, proc.stderr[:3000]
        assert "fxlens: torch cannot write its trace (No space left on device)" in proc.stderr
        assert proc.returncode == 2 and last.startswith("fxlens run: error: "), proc.stderr[-2000:]
        assert "cannot write session.json: No space left on device" in last
        assert "internal error" not in proc.stderr
        # what reached the disk is still data: report reads it, says what it skipped
        rep = fxlens("report", session)
        assert rep.returncode == 0, rep.stderr
        assert "graph(s)" in rep.stdout and not list(session.glob("*.tmp"))


def test_read_only_session_for_report_and_tui(tmp_path):
    src = _session_of_tiny(tmp_path / "src")
    with _mounted(tmp_path / "ro", "--bind", str(src)):
        subprocess.run(["mount", "-o", "remount,bind,ro", str(tmp_path / "ro")], check=True)
        ro = tmp_path / "ro"
        with pytest.raises(OSError):
            (ro / "probe").write_text("x")
        rep = fxlens("report", ro, cwd=tmp_path)
        assert rep.returncode == 0 and "4 graph(s)" in rep.stdout, rep.stderr

        from fxlens.trace.session import Session
        from fxlens.tui.app import FxlensApp

        app = FxlensApp(Session.open(ro), export_dir=tmp_path / "exports", cursor_blink=False)

        async def drive():
            async with app.run_test(size=(120, 40)) as pilot:
                for _ in range(600):
                    if app.ready:
                        break
                    await pilot.pause(0.05)
                assert app.ready and app.is_running

        asyncio.run(asyncio.wait_for(drive(), 120))


def test_two_runs_into_one_session_at_once(tmp_path):
    session, marker, mark = tmp_path / "s", tmp_path / "marker", uuid.uuid4().hex
    first = start("run", "--session", session, SCRIPTS / "hang_forks.py", marker, mark=mark)
    try:
        wait_for(lambda: (session / ".lock").exists(), 120, "the first run's lock")
        second = fxlens("run", "--session", session, SCRIPTS / "hang_forks.py", tmp_path / "m2")
        # refused before running anything (the script would write m2 and hang): no timing asserted
        one_line_error(second, "another fxlens run (pid", "is writing this session")
        assert not (tmp_path / "m2").exists()
    finally:
        first.terminate()
        first.communicate(timeout=60)
    no_orphans(mark)
    assert json.loads((session / "session.json").read_text())["interrupted"] is True


@pytest.mark.parametrize("where", ["directory", "missing_folder", "read_only"])
def test_json_to_a_path_that_cannot_be_written(tmp_path, where):
    trace = tmp_path / "t.log"
    shutil.copy(TINY, trace)
    ctx = contextlib.nullcontext()
    if where == "directory":
        dest, needle = tmp_path, "is a directory"
    elif where == "missing_folder":
        dest, needle = tmp_path / "nope" / "r.json", "no such directory"
    else:
        ctx = _mounted(tmp_path / "ro", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs")
        dest, needle = tmp_path / "ro" / "r.json", "not writable"
    with ctx:
        one_line_error(fxlens("report", "--json", dest, trace), f"--json {dest}: {needle}")
        # checked before the script runs, not after minutes of work
        for command in ("run", "bisect", "minify", "doctor"):
            proc = fxlens(command, "--json", dest, SCRIPTS / "hang_forks.py", tmp_path / "never")
            one_line_error(proc, f"--json {dest}: {needle}")
            assert not (tmp_path / "never").exists()  # the script (it writes `never`) never ran


def test_minify_out_onto_an_existing_file_is_refused(tmp_path):
    mine = tmp_path / "mine.py"
    mine.write_text("# someone's reproducer\n")
    proc = fxlens("minify", "--out", mine, SCRIPTS / "hang_forks.py", tmp_path / "never")
    one_line_error(proc, f"--out {mine}: already exists")
    assert mine.read_text() == "# someone's reproducer\n" and not (tmp_path / "never").exists()
