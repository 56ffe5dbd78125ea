"""Shared fixtures for minify tests: sessions and reproducers go to tmp_path, never the repo."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).parent / "scripts"


@pytest.fixture
def minify_env(tmp_path, monkeypatch):
    """FXLENS_SESSIONS_DIR and FXLENS_REPRO_DIR under tmp_path; returns the repro dir."""
    monkeypatch.setenv("FXLENS_SESSIONS_DIR", str(tmp_path / "sessions"))
    monkeypatch.setenv("FXLENS_REPRO_DIR", str(tmp_path / "repro"))
    monkeypatch.chdir(tmp_path)
    return tmp_path / "repro"


# `python FILE` where fxlens cannot be imported (a torch developer's machine, given a bug report)
WITHOUT_FXLENS = (
    "import os, runpy, sys; sys.modules['fxlens'] = None; p = sys.argv[1]; sys.argv = [p]; "
    "sys.path[0] = os.path.dirname(os.path.abspath(p)); runpy.run_path(p, run_name='__main__')"
)


def run_fresh(path, env=None, without_fxlens=False):
    """Run a script in a fresh interpreter: (exit status, the signature line it printed).
    `without_fxlens`: any import of fxlens in it fails, as where only torch is installed."""
    proc = subprocess.run(
        [sys.executable, *(["-c", WITHOUT_FXLENS] if without_fxlens else []), str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )
    sig = next(
        (
            ln.split(": ", 1)[1]
            for ln in reversed(proc.stderr.splitlines())
            if ln.startswith("fxlens-signature: ")
        ),
        None,
    )
    return proc.returncode, sig
