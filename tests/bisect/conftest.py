"""Fixtures: run the real `fxlens bisect` CLI on the scripts in tests/bisect/scripts."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).parent / "scripts"
MULTI = SCRIPTS / "multi.py"
MULTI_SRC = MULTI.read_text().splitlines()


def def_line(name: str) -> int:
    """The first line of function NAME in multi.py, its decorator included (co_firstlineno, what
    the culprit's `line` names, as the report's graphs do)."""
    line = next(i for i, ln in enumerate(MULTI_SRC, 1) if ln.startswith(f"def {name}("))
    while MULTI_SRC[line - 2].startswith("@"):
        line -= 1
    return line


@pytest.fixture
def bisect(tmp_path):
    """`bisect(SCRIPT, *script_args, opts=(fxlens options), env={...})` -> (CompletedProcess, verdict
    dict or None) of `fxlens bisect --json FILE [opts] SCRIPT [script_args]`."""

    def run(*args, opts=(), env=None, timeout=900):
        out = tmp_path / "verdict.json"
        proc = subprocess.run(
            [sys.executable, "-m", "fxlens.cli", "bisect", "--json", str(out), *opts, *map(str, args)],
            capture_output=True,
            text=True,
            env={**os.environ, "FXLENS_SESSIONS_DIR": str(tmp_path / "sessions"), **(env or {})},
            timeout=timeout,
        )
        verdict = json.loads(out.read_text()) if out.exists() else None
        return proc, verdict

    return run
