"""Fixtures: real sessions of scripts/v1/model.py and scripts/v2/model.py (the same script before
and after a code change), made once per test session, both runs at once."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).parent / "scripts"


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def fxlens(capsys):
    """The CLI's `main` in this process (reading sessions needs no subprocess: 10x faster)."""
    from fxlens.cli import main

    def run(*args) -> Result:
        capsys.readouterr()
        rc = main([str(a) for a in args])
        out = capsys.readouterr()
        return Result(rc, out.out, out.err)

    return run


@dataclass
class Pair:
    v1: Path  # session of v1/model.py
    v2: Path  # session of v2/model.py


@pytest.fixture(scope="session")
def pair(build_once) -> Pair:
    root = build_once("diff", _build)
    return Pair(root / "v1", root / "v2")


def _build(root: Path) -> None:
    procs = {
        name: subprocess.Popen(
            [
                sys.executable,
                "-m",
                "fxlens.cli",
                "run",
                "--backend",
                "eager",
                "--session",
                str(root / name),
                str(SCRIPTS / name / "model.py"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("v1", "v2")
    }
    for p in procs.values():
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-2000:]
