"""Bad input about a run (issue 34): a session.json field of the wrong type, a script Python cannot
decode, a working directory so deep torch's trace path would be too long. Each is one line, or the
run goes on as it would without fxlens; never an internal error, never a script fxlens made fail."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from proc_helpers import fxlens, one_line_error

SMALL = "import torch\nf = torch.compile(lambda x: x.sin() + 1, backend='eager')\nprint(float(f(torch.ones(3)).sum()))\n"


@pytest.fixture(scope="module")
def session(build_once) -> Path:
    def build(root: Path) -> None:
        (root / "small.py").write_text(SMALL)
        proc = fxlens("run", "--session", root / "s", root / "small.py")
        assert proc.returncode == 0, proc.stderr

    return build_once("faults-small-session", build) / "s"


@pytest.mark.parametrize(
    "field, value, said",
    [
        ("argv", "--lr 3", "field 'argv': expected a list of strings, got the string '--lr 3'"),
        ("exit_code", "1", "field 'exit_code': expected an integer or null, got the string '1'"),
        ("env", ["X=1"], "field 'env': expected an object of strings, got a list"),
        ("backend", 3, "field 'backend': expected a string or null, got the number 3"),
    ],
)
def test_malformed_session_field_is_one_line_everywhere(session, tmp_path, field, value, said):
    bad = tmp_path / "bad"
    shutil.copytree(session, bad)
    info = json.loads((bad / "session.json").read_text())
    (bad / "session.json").write_text(json.dumps({**info, field: value}))
    for args in (
        ("report", "--format", "markdown", bad),
        ("report", "--format", "html", bad),
        ("diff", session, bad),
    ):
        proc = fxlens(*args)
        assert proc.returncode == 2, proc.stderr  # bad input, not "internal error" (70)
        one_line_error(proc, said)


def test_script_python_cannot_decode_is_refused_before_running(tmp_path):
    script = tmp_path / "latin.py"
    script.write_bytes(b"import sys\n# caf\xe9\nopen(sys.argv[1], 'w').write('ran')\n")
    ran = tmp_path / "ran"
    # ground truth: python itself refuses it (a SyntaxError before any line runs)
    plain = subprocess.run([sys.executable, str(script), str(ran)], capture_output=True, text=True)
    assert plain.returncode == 1 and "Non-UTF-8" in plain.stderr and not ran.exists()
    for cmd in ("run", "bisect", "minify"):
        proc = fxlens(cmd, script, ran, env={"FXLENS_SESSIONS_DIR": str(tmp_path / "sessions")})
        assert proc.returncode == 2
        one_line_error(proc, "Python cannot decode it at byte 16", "coding")
    assert not ran.exists()
    declared = tmp_path / "declared.py"  # with its encoding declared, it runs
    declared.write_bytes(b"# -*- coding: latin-1 -*-\n# caf\xe9\nprint('ok')\n")
    assert fxlens("run", "--quiet", "--session", tmp_path / "d", declared).returncode == 0


def test_a_deep_working_directory_never_makes_the_script_fail(tmp_path):
    deep = tmp_path
    while len(str(deep)) < 3900:  # torch's trace path under the session would pass PATH_MAX
        deep = deep / ("d" * 200)
    deep.mkdir(parents=True)
    script = tmp_path / "small.py"
    script.write_text(SMALL)
    proc = fxlens("run", script, cwd=deep, env={"FXLENS_SESSIONS_DIR": ".fxlens/sessions"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "1 graph(s)" in proc.stdout
    home = os.getcwd()
    os.chdir(deep)  # the session is under it, by a path only relative to it is short enough
    try:
        (sdir,) = Path(".fxlens/sessions").iterdir()
        assert list((sdir / "trace").glob("*.log")) and (sdir / "events.jsonl").exists()
    finally:
        os.chdir(home)  # back where the test started: later tests in this worker resolve paths from it
