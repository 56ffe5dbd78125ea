"""Every path the user names for fxlens to write is refused in one line (exit 2) when it cannot be
written, before any work: a path under a regular file, and a folder nothing may write to (as root,
where permission bits do not stop writes: an immutable folder, or a read-only mount).

The commands run in this process (`fxlens.cli.main`), each on a script that would write a marker
file if it ran: a check that lets a bad path through shows up as the marker, not as a hang.
Ground truth that a place is unwritable: writing a file there by hand fails first.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from trace_edits import TINY

from fxlens.cli import main as cli_main
from fxlens.errors import FxlensError
from fxlens.report.outputs import check_folder_writable, check_writable, write_text

# (id, argv with X = the target path, S = the script, M = its marker, T = a trace, env)
CASES = [
    ("run --session", ["run", "--session", "X/s", "S", "M"], {}),
    ("run --json", ["run", "--json", "X/r.json", "S", "M"], {}),
    ("report --json", ["report", "--json", "X/r.json", "T"], {}),
    ("report --out", ["report", "--out", "X/r.txt", "T"], {}),
    ("report --format html --out", ["report", "--format", "html", "--out", "X/r.html", "T"], {}),
    ("report --perfetto", ["report", "--perfetto", "X/r.pf", "T"], {}),
    ("bisect --json", ["bisect", "--json", "X/b.json", "S", "M"], {}),
    ("bisect --report", ["bisect", "--format", "markdown", "--report", "X/b.md", "S", "M"], {}),
    ("minify --out", ["minify", "--out", "X/repro.py", "S", "M"], {}),
    ("minify --out DIR/", ["minify", "--out", "X/repros/", "S", "M"], {}),
    ("minify --json", ["minify", "--json", "X/m.json", "S", "M"], {}),
    ("minify --report", ["minify", "--format", "html", "--report", "X/m.html", "S", "M"], {}),
    ("minify --kernel --out", ["minify", "--kernel", "--out", "X/k.py", "S", "M"], {}),
    ("minify --kernel --json", ["minify", "--kernel", "--json", "X/k.json", "S", "M"], {}),
    ("FXLENS_REPRO_DIR", ["minify", "S", "M"], {"FXLENS_REPRO_DIR": "X/repros"}),
    ("doctor --json", ["doctor", "--json", "X/d.json", "S", "M"], {}),
    ("fix --session", ["fix", "--session", "X/s", "S", "M"], {}),
    ("fix --json", ["fix", "--json", "X/f.json", "S", "M"], {}),
    ("diff --json", ["diff", "--json", "X/d.json", "T", "T"], {}),
    ("diff --out", ["diff", "--out", "X/d.txt", "T", "T"], {}),
    ("FXLENS_SESSIONS_DIR run", ["run", "S", "M"], {"FXLENS_SESSIONS_DIR": "X/sessions"}),
    ("FXLENS_SESSIONS_DIR doctor", ["doctor", "S", "M"], {"FXLENS_SESSIONS_DIR": "X/sessions"}),
]


def _can_write(folder: Path) -> bool:
    try:
        (folder / "probe").write_text("x")
    except OSError:
        return False
    (folder / "probe").unlink()
    return True


@contextlib.contextmanager
def _unwritable(tmp_path: Path):
    """A folder nothing may write to: mode 555 for a normal user; as root an immutable folder
    (chattr +i), else a read-only tmpfs; skipped where neither can be made."""
    d = tmp_path / "locked"
    d.mkdir()
    if os.geteuid() != 0:
        d.chmod(0o555)
        try:
            yield d
        finally:
            d.chmod(0o755)
        return
    if (
        shutil.which("chattr")
        and subprocess.run(["chattr", "+i", str(d)], capture_output=True).returncode == 0
    ):
        try:
            yield d
        finally:
            subprocess.run(["chattr", "-i", str(d)], capture_output=True)
        return
    if subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(d)], capture_output=True
    ).returncode:
        pytest.skip("no way to make an unwritable folder here (not chattr, not mount)")
    try:
        yield d
    finally:
        subprocess.run(["umount", "-l", str(d)], capture_output=True)


@pytest.fixture(params=["under_a_file", "unwritable_folder"])
def target(request, tmp_path):
    if request.param == "under_a_file":
        f = tmp_path / "plain_file"
        f.write_text("not a folder\n")
        yield f, "plain_file is a file, not a folder"
        return
    with _unwritable(tmp_path) as d:
        assert not _can_write(d)  # the ground truth: nothing can write there, root included
        yield d, "not writable ("


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_unwritable_output_path_is_one_line_and_exit_2(case, target, tmp_path, capsys, monkeypatch):
    _, argv, env = case
    where, needle = target
    script, marker = tmp_path / "writes_marker.py", tmp_path / "ran"
    script.write_text("import sys\nopen(sys.argv[1], 'w').write('ran')\n")
    trace = tmp_path / "t.log"
    shutil.copy(TINY, trace)
    subs = {"S": str(script), "M": str(marker), "T": str(trace)}
    args = [subs.get(a, a.replace("X/", f"{where}/")) for a in argv]
    for k, v in env.items():
        monkeypatch.setenv(k, v.replace("X/", f"{where}/"))
    monkeypatch.setenv(
        "FXLENS_SESSIONS_DIR", env.get("FXLENS_SESSIONS_DIR", str(tmp_path / "s")).replace("X/", f"{where}/")
    )
    monkeypatch.chdir(tmp_path)
    rc = cli_main(args)
    err = capsys.readouterr().err.strip()
    assert rc == 2, err
    assert len(err.splitlines()) == 1 and err.startswith(f"fxlens {args[0]}: error: "), err
    assert "internal error" not in err and str(where) in err
    # the session folders say why in their own words (the folder they could not create)
    assert needle in err or "cannot create the session directory" in err, err
    assert not marker.exists()  # refused before the script ran


def test_checks_leave_no_file_behind_and_existing_files_untouched(tmp_path):
    new, old = tmp_path / "new.json", tmp_path / "old.json"
    old.write_text("keep me\n")
    check_writable(new)
    check_writable(old)
    check_folder_writable(tmp_path / "a" / "b")
    assert not new.exists() and old.read_text() == "keep me\n" and not (tmp_path / "a").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.json"]  # no probe file left


def test_a_write_that_fails_after_the_check_is_one_line(tmp_path):
    # the place became unwritable while the work ran (here: a file took the folder's place)
    (tmp_path / "gone").write_text("")
    with pytest.raises(FxlensError, match=r"^--out .*gone/r\.txt: cannot write \(Not a directory\)$"):
        write_text("report", tmp_path / "gone" / "r.txt", "--out")


def test_a_fifo_or_device_output_is_not_opened_to_check_it(tmp_path):
    # opening a FIFO for writing blocks until a reader comes: the check must not (a test hang)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    check_writable(fifo, "--out")
    check_writable("/dev/null", "--json")
    assert fifo.exists() and not fifo.is_file()
