"""A bisect session keeps each run's trace in runs/<n>-<label>: the results view opens one (r) on
top of the session, in the same app, and escape comes back to the session as it was left."""

from __future__ import annotations

import pytest
from tui_helpers import make_app, press, wait_loaded

from fxlens.trace.session import Session
from fxlens.tui.lazy_table import VimTable
from fxlens.tui.session_screen import SessionScreen
from fxlens.tui.widgets import CompileTree, Info

pytestmark = pytest.mark.tui
SIZE = (120, 40)


async def test_open_a_bisect_run_trace_and_come_back(in_root, tmp_path):
    app = make_app(in_root.bisect, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(app, pilot)
        base = app.screen
        assert app.current_view == "results"  # the session has results and runs, no trace
        notice = app.query_one("#notice", Info)
        assert "results only" in notice.plain and "enter on a run" in notice.plain
        (section,) = app.query_one("#tree", CompileTree).root.children  # the runs, in the tree too
        assert [str(n.label).split()[1] for n in section.children] == [
            "runs/01-fxlens_eager",
            "runs/02-fxlens",
        ]
        runs = app.query_one("#results-runs", VimTable)
        assert [r[0] for r in runs._rows_plain()] == ["runs/01-fxlens_eager", "runs/02-fxlens"]
        assert [r[1] for r in runs._rows_plain()] == ["0", "1"]  # exit codes from session.json
        # the culprit (compile 1/1) is in a run's trace: o opens the last run at its graph
        await press(pilot, "o")
        culprit = app.screen
        assert isinstance(culprit, SessionScreen) and culprit.parent_screen is base
        await wait_loaded(app, pilot)
        assert "02-fxlens" in culprit.sub_title
        assert app.current_view == "graph" and app.view().params["compile_id"] == "1/1"
        assert "compile 1/1" in culprit.query_one("#graph-title", Info).plain
        await press(pilot, "escape")
        assert app.screen is base and app.current_view == "results"
        await press(pilot, "v", "tab", "tab")  # events table, detail, runs table
        assert app.focused is runs
        await press(pilot, "k", "r")  # the first run: open it
        top = app.screen
        assert isinstance(top, SessionScreen) and top is not base and top.parent_screen is base
        await wait_loaded(app, pilot)
        run = Session.open(in_root.bisect / "runs" / "01-fxlens_eager")
        tree = top.query_one("#tree", CompileTree)  # (app.query_one looks at the base screen)
        (rank,) = tree.root.children
        assert {f.function for f in (n.data[1] for n in rank.children)} == {g.function for g in run.graphs}
        assert app.current_view == "graph" and app.view().params["compile_id"] == "0/0"
        assert "01-fxlens_eager" in top.sub_title and in_root.bisect.name in top.sub_title
        await press(pilot, "3")
        assert app.current_view == "breaks"
        await press(pilot, "escape")  # back to the bisect session, as it was
        assert app.screen is base and app.current_view == "results"
        assert app.query_one("#results-runs", VimTable).cursor_row == 0
        assert app.view().params["run"] == "runs/01-fxlens_eager"
        await press(pilot, "t", "G", "enter")  # the other run, from the tree: a fresh screen
        await wait_loaded(app, pilot)
        assert app.screen is not base and "02-fxlens" in app.screen.sub_title
        compiles = {c.compile_id for r in app.data.ranks for f in r.frames for c in f.compiles}
        assert "1/1" in compiles
        await press(pilot, "escape", "escape")  # a second escape in the base session does nothing
        assert app.screen is base and app.is_running


async def test_plain_session_has_no_runs(in_root, tmp_path):
    app = make_app(in_root.session, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(app, pilot)
        await press(pilot, "6", "r")
        assert app.screen is app.main and app.main.parent_screen is None
        assert not app.query_one("#results-runs", VimTable).display


def test_child_runs_of_bisect_and_minify_sessions(in_root, tmp_path):
    """bisect keeps runs/<n>-<label>, minify children/<name>; a run without a trace is not listed."""
    import shutil

    from fxlens.trace.session import write_info
    from fxlens.tui.loader import child_runs

    s = tmp_path / "minify"
    s.mkdir()
    write_info(s, {"command": "minify"})
    log = next((in_root.session / "trace").glob("*.log"))
    (s / "children" / "capture" / "trace").mkdir(parents=True)
    shutil.copy(log, s / "children" / "capture" / "trace" / log.name)
    (s / "children" / "capture" / "session.json").write_text("{not json")  # still listed
    (s / "runs" / "01-empty" / "trace").mkdir(parents=True)  # no log: not a run to open
    runs = child_runs(Session.open(s))
    assert [r["name"] for r in runs] == ["children/capture"]
    assert runs[0]["exit_code"] is None and runs[0]["logs"] == 1 and runs[0]["mb"] > 0
    assert [r["name"] for r in child_runs(Session.open(in_root.bisect))] == [
        "runs/01-fxlens_eager",
        "runs/02-fxlens",
    ]
    assert child_runs(Session.open(in_root.multi)) == []  # a trace directory has no runs
