"""Fixtures: run the real scripts in tests/capture/scripts through `fxlens run` once per module."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).parent / "scripts"


def fxlens(*args, cwd=None, env=None, timeout=300):
    """Run the real `fxlens` CLI in a subprocess; returns CompletedProcess with text output."""
    return subprocess.run(
        [sys.executable, "-m", "fxlens.cli", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        timeout=timeout,
    )


@pytest.fixture(scope="session")
def sessions_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("sessions")
    os.environ["FXLENS_SESSIONS_DIR"] = str(root)
    return root


@pytest.fixture(scope="session")
def run_report(sessions_root, tmp_path_factory):
    """`run_report("breaks")` -> (CompletedProcess, report dict) of `fxlens run scripts/breaks.py --json`."""
    cache = {}

    def run(name, *extra):
        key = (name, extra)
        if key not in cache:
            out = tmp_path_factory.mktemp("json") / f"{name}.json"
            proc = fxlens("run", SCRIPTS / f"{name}.py", "--json", out, *extra)
            report = json.loads(out.read_text()) if out.exists() else None
            cache[key] = (proc, report)
        return cache[key]

    return run
