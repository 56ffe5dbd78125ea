"""Fixtures: a real session of scripts/hostile.py (markup, pipes, backticks and a terminal escape in
its graph-break message and source line), and a copy of it whose trace records were edited to give
the function and the break reason hostile names too. Made once per test run (`build_once`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from report_helpers import EVIL_FUNCTION, EVIL_REASON

SCRIPTS = Path(__file__).parent / "scripts"


@dataclass
class Hostile:
    script: Path
    session: Path  # as `fxlens run` wrote it
    edited: Path  # function and reason renamed in the trace records


@pytest.fixture(scope="session")
def hostile(build_once) -> Hostile:
    root = build_once("hostile", _build)
    return Hostile(root / "hostile.py", root / "s", root / "edited")


def _build(root: Path) -> None:
    script = root / "hostile.py"
    shutil.copy(SCRIPTS / "hostile.py", script)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "fxlens.cli",
            "run",
            "--backend",
            "eager",
            "--session",
            str(root / "s"),
            str(script),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    edited = root / "edited"
    shutil.copytree(root / "s", edited)
    (log,) = (edited / "trace").glob("*.log")
    text = log.read_text()
    assert '"co_name": "f"' in text and "Call to `torch._dynamo.graph_break()`" in text
    text = text.replace('"co_name": "f"', f'"co_name": "{EVIL_FUNCTION}"')
    text = text.replace("Call to `torch._dynamo.graph_break()`", EVIL_REASON)
    log.write_text(text)


def run_traced(script: str, trace: Path, *args: str, env: dict | None = None) -> Path:
    """Run scripts/SCRIPT under TORCH_TRACE=trace; the trace folder."""
    proc = subprocess.run(
        [sys.executable, str(SCRIPTS / script), *args],
        env={**os.environ, "TORCH_TRACE": str(trace), **(env or {})},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return trace


@pytest.fixture(scope="session")
def stages_trace(build_once) -> Path:
    """compile_stages.py under aot_eager: a restart (graph break on print) and a failing backend."""
    return (
        build_once("compile-stages", lambda d: run_traced("compile_stages.py", d / "trace", "aot_eager"))
        / "trace"
    )


@pytest.fixture(scope="session")
def specialize_trace(build_once) -> Path:
    """specialize.py: `x.shape[0] == 8` under dynamic=True fixes x's dim 0 to 8."""
    return build_once("specialize", lambda d: run_traced("specialize.py", d / "trace")) / "trace"
