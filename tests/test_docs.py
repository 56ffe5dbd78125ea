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


# a path of the machine a page was written on: a home or worktree folder, a virtualenv's library,
# a temporary folder of one run (torch's and fxlens's own cache folders are named by variable)
_MACHINE_PATH = re.compile(r"(?<![\w.$>])(/root/|/work/|/home/\w|/Users/\w|/tmp/|[\w.-]*venv/lib/)")


def test_docs_hold_no_machine_paths():
    pages = [ROOT / "README.md", ROOT / "BENCHMARKS.md", *sorted((ROOT / "docs").rglob("*.md"))]
    bad = [
        f"{p.relative_to(ROOT)}:{n}: {m.group(1)}"
        for p in pages
        for n, line in enumerate(p.read_text().split("\n"), 1)
        if (m := _MACHINE_PATH.search(line))
    ]
    assert bad == [], "\n".join(bad)


def test_machine_path_pattern_catches_what_it_should():
    # the pattern itself, on lines that were once in the docs, and on ones that must pass
    caught = [
        "in file `/work/main/.venv/lib/python3.11/site-packages/torch/_compile.py`",
        "at /work/wt22/tests/report/scripts/specialize.py:8",
        "  0/0 f: /tmp/provcache/7r/c7r7.py (106 lines)",
        "/root/.cache/x",
        "see .venv/lib/python3.11/site-packages/torch",
    ]
    passed = [
        "`fxlens report .fxlens/sessions/x`",
        "source $TMPDIR/fxlens_<uid>/kernels/fxk_1.py",
        "`<cache>/5a/c5au.py`",
        "tests/report/scripts/specialize.py:8",
        "python3 -m venv .venv && . .venv/bin/activate",
    ]
    assert all(_MACHINE_PATH.search(s) for s in caught)
    assert not any(_MACHINE_PATH.search(s) for s in passed)


def test_docs_home_names_every_command():
    from fxlens.cli import COMMANDS

    home = (ROOT / "docs" / "index.md").read_text()
    missing = [c for c in COMMANDS if f"`fxlens {c}" not in home]
    assert missing == [], f"docs/index.md never shows: {missing}"
    assert "live" in home.lower() and "guides/live.md" in home  # the live view of `fxlens run`
