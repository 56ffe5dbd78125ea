"""`fxlens fix` run as a user runs it, for the fix tests: its process and its --json result."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPTS = Path(__file__).parent / "scripts"


def run_fix(
    tmp: Path, script: str | Path, *opts: str, stdin: str | None = None
) -> tuple[subprocess.CompletedProcess, dict]:
    """`fxlens fix --session TMP/s --json TMP/fix.json OPTS SCRIPT` in TMP (a bare name: one of
    tests/fix/scripts), with STDIN as its input."""
    out = tmp / "fix.json"
    path = SCRIPTS / script if isinstance(script, str) and "/" not in script else Path(script)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "fxlens.cli",
            "fix",
            "--session",
            str(tmp / "s"),
            "--json",
            str(out),
            *opts,
            str(path),
        ],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=tmp,
        env={**os.environ, "FXLENS_SESSIONS_DIR": str(tmp / "sessions")},
        timeout=900,
    )
    return proc, (json.loads(out.read_text()) if out.exists() else {})
