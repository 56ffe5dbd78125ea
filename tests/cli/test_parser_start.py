"""The CLI's parser as built at start: help wrapped to shutil's width (found without importing
shutil), one subcommand's parser for a known command, every command still listed otherwise."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fxlens.cli import COMMANDS, _help_width, build_parser


@pytest.mark.parametrize("columns", ["100", "57", "0", "-3", "wide", None])
def test_help_width_is_what_shutil_gives_argparse(columns, monkeypatch):
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert _help_width() == shutil.get_terminal_size().columns - 2


def test_a_known_command_builds_its_parser_alone():
    _, subs = build_parser("report")
    assert list(subs) == ["report"]
    _, subs = build_parser()
    assert list(subs) == list(COMMANDS)


def test_an_unknown_command_still_lists_every_command():
    proc = subprocess.run(
        [sys.executable, "-m", "fxlens.cli", "nosuch"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2
    assert all(f"'{name}'" in proc.stderr for name in COMMANDS)


def test_report_start_imports_no_shutil_tempfile_or_textual():
    log = Path(__file__).resolve().parents[1] / "data" / "tlparse" / "simple.log"
    code = (
        "import sys, runpy; sys.argv = ['fxlens', 'report', sys.argv[1]]\n"
        "try:\n    runpy.run_module('fxlens.cli', run_name='__main__')\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('shutil', 'tempfile', 'textual', 'torch') if m in sys.modules))"
    )
    base = subprocess.run(
        [sys.executable, "-c", "import sys; print('shutil' in sys.modules)"], capture_output=True, text=True
    )
    if base.stdout.strip() == "True":
        pytest.skip("this interpreter's start imports shutil itself")
    out = subprocess.run([sys.executable, "-c", code, str(log)], capture_output=True, text=True, timeout=60)
    assert "Compiles" in out.stdout or "compile" in out.stdout  # the report was printed
    assert out.stdout.strip().splitlines()[-1] == "[]"
