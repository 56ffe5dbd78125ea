"""The Diff page (`fxlens tui A --diff B`, key `D`), driven by Pilot on two real runs of one script
(the second compiles once more)."""

from __future__ import annotations

import pytest
from tui_helpers import press, wait_loaded

from fxlens.cli import main as cli_main
from fxlens.trace.session import Session
from fxlens.tui.app import FxlensApp
from fxlens.tui.session_screen import SessionScreen
from fxlens.tui.view_diff import DiffScreen
from fxlens.tui.widgets import KeyBar

pytestmark = pytest.mark.tui
SIZE = (120, 40)


async def _diff_shown(app, pilot, timeout: float = 30.0) -> DiffScreen:
    waited = 0.0
    while not (isinstance(app.screen, DiffScreen) and app.screen.ready) and waited < timeout:
        await pilot.pause(0.05)
        waited += 0.05
    assert isinstance(app.screen, DiffScreen) and app.screen.ready
    await pilot.pause()
    return app.screen


async def test_diff_page_opens_at_start_and_with_D(in_root, tmp_path):
    a, b = Session.open(in_root.session), Session.open(in_root.root / "run1")
    app = FxlensApp(a, export_dir=tmp_path, cursor_blink=False, diff_with=b)
    async with app.run_test(size=SIZE) as pilot:
        page = await _diff_shown(app, pilot)
        text = page.plain
        assert "verdict: B is WORSE than A: graphs +2, graph_breaks +1, recompiles +2" in text
        shown = str(page.query_one("#diff-verdict").render())
        assert shown.startswith("B is WORSE than A")
        assert "back to the session" in page.query_one(KeyBar).plain
        await press(pilot, "j", "G", "g", "escape")
        assert isinstance(app.screen, SessionScreen)
        await wait_loaded(app, pilot)
        await press(pilot, "D")
        assert (await _diff_shown(app, pilot)).plain == text


async def test_D_without_a_second_session_says_how(in_root, tmp_path):
    app = FxlensApp(Session.open(in_root.session), export_dir=tmp_path, cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(app, pilot)
        await press(pilot, "D")
        assert isinstance(app.screen, SessionScreen)
        assert any("--diff B" in str(n.message) for n in app._notifications)


def test_cli_bad_diff_path_is_one_line(in_root, capsys):
    assert cli_main(["tui", "--diff", str(in_root.root / "nope"), str(in_root.session)]) != 0
    err = capsys.readouterr().err.strip()
    assert "nope" in err and "\n" not in err
