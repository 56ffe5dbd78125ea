"""The watched script ends badly (os._exit, SIGKILL, leaves a forked child, never ends) or its backend
segfaults, aborts or hangs on some graphs: fxlens reports it in one line, keeps the session, and
leaves no process behind.
"""

import uuid
from pathlib import Path

import pytest
from proc_helpers import fxlens, marked, no_orphans, one_line_error

SCRIPTS = Path(__file__).parent / "scripts"
EXITS = SCRIPTS / "exits.py"


def _env(tmp_path, **extra):
    mark = uuid.uuid4().hex
    env = {
        "FXLENS_SESSIONS_DIR": str(tmp_path / "sessions"),
        "FXLENS_REPRO_DIR": str(tmp_path / "repro"),
        "FXLENS_FAULT_TEST_MARK": mark,
        **extra,
    }
    return env, mark


def test_run_script_calling_os_exit(tmp_path):
    env, mark = _env(tmp_path)
    proc = fxlens("run", "--session", tmp_path / "s", EXITS, "os_exit", env=env)
    assert proc.returncode == 3, proc.stderr  # the script's own status
    assert "1 graph(s)" in proc.stdout and "the script exited with status 3" in proc.stdout
    no_orphans(mark)


def test_run_script_killed_by_sigkill(tmp_path):
    env, mark = _env(tmp_path)
    proc = fxlens("run", "--session", tmp_path / "s", EXITS, "sigkill", env=env)
    assert proc.returncode == 137, proc.stderr  # 128 + 9, as a shell shows it
    assert "1 graph(s)" in proc.stdout and "the script was killed by SIGKILL" in proc.stdout
    no_orphans(mark)


def test_run_script_that_leaves_a_forked_child(tmp_path):
    env, mark = _env(tmp_path)
    pid_file = tmp_path / "child.pid"
    proc = fxlens("run", "--session", tmp_path / "s", EXITS, "fork_and_exit", pid_file, env=env)
    assert proc.returncode == 0, proc.stderr
    # the child it left running was in the script's process group: ended with it
    assert int(pid_file.read_text()) not in marked(mark)
    no_orphans(mark)


@pytest.mark.parametrize("command", ["bisect", pytest.param("minify", marks=pytest.mark.slow), "doctor"])
def test_timeout_ends_a_script_that_never_ends(tmp_path, command):
    env, mark = _env(tmp_path)
    # the script hangs before its torch.compile line, so the verdict does not depend on how fast
    # this machine imports torch (CI once compiled hang_forks.py's graph within the 2 s)
    proc = fxlens(command, "--timeout", "2", SCRIPTS / "hang_before_compile.py", tmp_path / "marker", env=env)
    last = one_line_error(proc, "did not finish within 2 s (--timeout) before compiling anything")
    assert "no exit within" not in last  # said once, with the limit the script had
    if command == "bisect":  # the run's line: the 2 s limit, not the run's wall time (warm start)
        assert "FAILS (timeout: no exit within 2 s)" in proc.stdout, proc.stdout
    no_orphans(mark)


@pytest.mark.parametrize("command", ["bisect", "minify", "doctor"])
def test_timeout_default_is_stated_in_help(command):
    proc = fxlens(command, "--help")
    assert proc.returncode == 0 and "--timeout SECONDS" in proc.stdout
    assert "(default: 600; 0: no limit)" in " ".join(proc.stdout.split())


@pytest.mark.slow  # ~45 s here
@pytest.mark.parametrize("fault, sig", [("segv", "SIGSEGV"), ("abort", "SIGABRT")])
def test_doctor_backend_that_crashes_on_some_graphs(tmp_path, fault, sig):
    env, mark = _env(tmp_path, FAULT=fault)
    proc = fxlens("doctor", SCRIPTS / "bad_backend.py", env=env)
    assert proc.returncode == 128 + {"SIGSEGV": 11, "SIGABRT": 6}[sig], proc.stderr
    one_line_error(proc, f"was killed by {sig} after calling torch.compile")
    no_orphans(mark)


@pytest.mark.slow  # the 60 s timeout itself
def test_doctor_backend_that_hangs_on_some_graphs(tmp_path):
    env, mark = _env(tmp_path, FAULT="hang")
    proc = fxlens("doctor", "--timeout", "60", SCRIPTS / "bad_backend.py", env=env)
    assert proc.returncode == 124, proc.stderr
    one_line_error(proc, "did not finish within 60 s (--timeout) after calling torch.compile")
    no_orphans(mark)


@pytest.mark.slow
@pytest.mark.parametrize("fault, verdict", [("segv", "SIGSEGV"), ("abort", "SIGABRT"), ("hang", "timeout")])
def test_bisect_backend_that_fails_on_some_graphs(tmp_path, fault, verdict):
    env, mark = _env(tmp_path, FAULT=fault)
    proc = fxlens("bisect", "--timeout", "60", SCRIPTS / "bad_backend.py", env=env, timeout=900)
    assert proc.returncode in (0, 1), proc.stderr
    out = proc.stdout
    assert verdict in out and "bad_backend.py:27" in out, out[-3000:]  # g, the graph with the mul
    no_orphans(mark)


@pytest.mark.slow
def test_minify_backend_that_hangs_on_some_graphs(tmp_path):
    # the script's run is ended at --timeout inside g's compile; candidates that hang count as
    # "timeout" (FXLENS_MINIFY_TIMEOUT each), the failure minified
    env, mark = _env(tmp_path, FAULT="hang", FXLENS_MINIFY_TIMEOUT="20", FXLENS_MINIFY_RERUNS="1")
    out = tmp_path / "hang_repro.py"
    proc = fxlens(
        "minify", "--timeout", "60", "--out", out, SCRIPTS / "bad_backend.py", env=env, timeout=1500
    )
    assert "timeout" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert out.exists()
    no_orphans(mark)
