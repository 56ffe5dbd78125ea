"""Helpers for the capture tests (a unique module name: several test folders have a conftest)."""

import os
import subprocess
import sys
from pathlib import Path

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

