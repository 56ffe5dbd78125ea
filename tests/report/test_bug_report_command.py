"""A bug report carries the whole command (the script's arguments, `-m`, the switches it ran under)
and every headline in every format, multi-rank jobs included (issue 34)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).parent / "scripts"
TYPED = "fxlens run --backend eager -m nograph_pkg.run --steps 2"


def _fxlens(*args, cwd=None, env=None):
    return subprocess.run(
        [sys.executable, "-m", "fxlens.cli", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )


def _build(root: Path) -> None:
    proc = _fxlens(
        *["run", "--session", root / "s", "--backend", "eager", "-m", "nograph_pkg.run", "--steps", "2"],
        cwd=SCRIPTS,
        env={"FXLENS_INJECT": "accuracy:aten.erf"},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    (root / "stdout").write_text(proc.stdout)
    # the same log as two ranks' logs (rank-named): a multi-rank job where no rank captured a graph
    (log,) = (root / "s" / "trace").glob("*.log")
    (root / "ranks").mkdir()
    for r in (0, 1):
        shutil.copy(log, root / "ranks" / f"dedicated_log_torch_trace_rank_{r}_x.log")


@pytest.fixture(scope="module")
def run(build_once) -> Path:
    return build_once("report-nograph-module", _build)


@pytest.fixture
def report(capsys):
    """`fxlens report ARGS` in this process (reading a session needs no subprocess): its stdout."""
    from fxlens.cli import main

    def run(*args) -> str:
        capsys.readouterr()
        assert main([str(a) for a in ("report", *args)]) == 0
        return capsys.readouterr().out

    return run


def _command(text: str, fence: str = "`") -> str:
    return re.search(rf"command: {fence}([^{fence}\n]*){fence}", text)[1]


def test_every_format_carries_the_whole_command(run, report):
    # ground truth: torch itself counted no graph in the script's own run
    assert "unique_graphs: 0" in (run / "stdout").read_text()
    md, html, text = (report(*f, run / "s") for f in (("--format", "markdown"), ("--format", "html"), ()))
    shown = _command(md)
    assert shown == f"FXLENS_INJECT=accuracy:aten.erf {TYPED}"
    assert shlex.split(shown)[1:] == shlex.split(TYPED)  # pastes as typed: -m and the argument kept
    assert f"<code>FXLENS_INJECT=accuracy:aten.erf {TYPED}</code>" in html
    for out in (md, html, text):
        assert "torch.compile captured no graph" in out
    # the backend override: in the text report too, not only in markdown
    assert "backend override: eager" in text and "backend override: " in md


def test_multi_rank_markdown_keeps_every_headline(run, report):
    md, html, text = (report(*f, run / "ranks") for f in (("--format", "markdown"), ("--format", "html"), ()))
    assert "2 ranks" in text and "torch.compile captured no graph" in text
    for out in (md, html):
        assert "torch.compile captured no graph" in out and "runs eagerly from compile 0/0" in out
