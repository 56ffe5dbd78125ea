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


def run_fresh(path, env=None):
    """Run a script in a fresh interpreter: (exit status, the signature line it printed)."""
    proc = subprocess.run(
        [sys.executable, str(path)],
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
