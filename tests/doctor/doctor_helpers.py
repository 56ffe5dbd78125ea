"""Helpers shared by the doctor tests (a uniquely named module: tests/capture has its own conftest)."""

import os
import subprocess
import sys
from pathlib import Path

SCRIPTS = Path(__file__).parent / "scripts"


def fxlens(*args, env_root=None, timeout=600):
    """Run the fxlens CLI in a child process (as a user would), sessions under `env_root`."""
    env = dict(os.environ)
    if env_root is not None:
        env["FXLENS_SESSIONS_DIR"] = str(env_root)
    return subprocess.run(
        [sys.executable, "-m", "fxlens.cli", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
