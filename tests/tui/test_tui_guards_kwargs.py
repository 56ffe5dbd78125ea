"""The Guards view finds the failed guard line of a keyword input (issue 34: `kwargs['input_ids']`
read as no matching guard line)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tui_helpers import make_app, press, wait_loaded

from fxlens.trace.session import Session
from fxlens.tui.guardmatch import failed_guards
from fxlens.tui.widgets import CodeView, Info

pytestmark = pytest.mark.tui
SCRIPT = Path(__file__).parent / "kwargs_script.py"


@pytest.fixture(scope="module")
def session(build_once) -> Path:
    def build(root: Path) -> None:
        proc = subprocess.run(
            [sys.executable, "-m", "fxlens.cli", "run", "--quiet", "--session", str(root / "s"), str(SCRIPT)],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]

    return build_once("tui-kwargs", build) / "s"


def test_keyword_input_reason_is_located(session):
    s = Session.open(session)
    (rc,) = s.recompiles
    # ground truth: torch's own reason and guard tree name the keyword input
    assert "tensor 'kwargs['input']' size mismatch" in rc.failed_guards[0]
    guards = s.guards("0/0")
    (fg,) = failed_guards("0/0", s.recompiles, guards)
    assert fg.line_index is not None
    assert "TENSOR_MATCH" in guards[fg.line_index] and "L['kwargs']['input']" in guards[fg.line_index]


async def test_guards_view_marks_the_keyword_inputs_guard(session, tmp_path):
    app = make_app(session, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(app, pilot)
        await press(pilot, "t", "g", "j", "l", "j", "enter")
        await pilot.pause()
        await press(pilot, "2")
        assert app.current_view == "guards"
        code = app.query_one("#guards-code", CodeView)
        failed = [i for i, m in code.marks.items() if m == "failed"]
        assert len(failed) == 1 and "L['kwargs']['input']" in code.lines[failed[0]]
        title = app.query_one("#guards-title", Info).plain
        assert "recompile 0/1" in title and "no matching guard line" not in title
