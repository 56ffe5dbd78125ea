"""The docs site builds with `mkdocs build --strict`, and the generated reference pages are current.

Skipped where mkdocs is not installed (it is in the dev extra, so CI has it).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_generated_reference_pages_are_current():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "gen_reference.py"), "--check"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr


def test_mkdocs_build_strict(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent)) or shutil.which("mkdocs")
    proc = subprocess.run(
        [mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]


def test_readme_stays_short_and_keeps_the_ci_test_command():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.encode()) <= 15_000
    ci = (ROOT / ".ci" / "run").read_text()
    (command,) = re.findall(r"python -m pytest[^\n]*", ci)
    assert command.strip() in readme, "README's test command must be .ci/run's"
