"""The docs site builds with `mkdocs build --strict`, and the generated reference pages are current.

Skipped where mkdocs is not installed (it is in the dev extra, so CI has it).
"""

from __future__ import annotations

import re
import runpy
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


def test_benchmarks_page_is_generated_from_benchmarks_md():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "gen_benchmarks.py"), "--check"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr


def test_a_bench_write_stamps_its_section_and_keeps_the_others(tmp_path, monkeypatch):
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import benchmarks_md
    finally:
        sys.path.remove(str(ROOT / "bench"))
    notes = tmp_path / "BENCHMARKS.md"
    notes.write_text(
        "# Benchmarks\n\n## A\n\nLast run: `python bench/a.py` · old box · 2020-01-01\n\n| x |\n|---|\n| 1 |\n\n## B\n\nkept\n"
    )
    monkeypatch.setattr(sys, "argv", [str(ROOT / "bench" / "a.py"), "--write"])
    benchmarks_md.write_table("A", "| x |\n|---|\n| 2 |\n", path=notes)
    text = notes.read_text()
    (stamp,) = [ln for ln in text.splitlines() if ln.startswith("Last run:")]
    assert stamp.startswith("Last run: `python bench/a.py --write` · ") and "2020-01-01" not in stamp
    assert "| 2 |" in text and "| 1 |" not in text and "## B\n\nkept" in text
    gen = runpy.run_path(str(ROOT / "docs" / "gen_benchmarks.py"))
    page, problems = gen["page"](text)
    assert problems == ["BENCHMARKS.md section 'B' has no 'Last run:' line, no table"]
    assert "- command: `python bench/a.py --write`" in page and "| 2 |" in page


def test_mkdocs_build_strict(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent)) or shutil.which("mkdocs")
    proc = subprocess.run(
        [mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]


def test_readme_stays_short_and_keeps_the_ci_test_command():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.encode()) <= 15_000
    ci = (ROOT / ".ci" / "run").read_text()
    (command,) = re.findall(r"python -m pytest[^\n]*", ci)
    assert command.strip() in readme, "README's test command must be .ci/run's"
