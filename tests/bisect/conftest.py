"""Fixtures: run the real `fxlens bisect` CLI on the scripts in tests/bisect/scripts."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from schema_check import validate

sys.path.insert(0, str(Path(__file__).parent))


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
        if verdict is not None:
            validate("bisect", verdict)
        return proc, verdict

    return run
