"""Locations where space is short: a session opened from another folder shows its files relative to
the script's folder, a location too long for its column is cut from the left (file and line stay),
and frames whose long names share a prefix stay apart in the tree.

data/nested_session is a real `fxlens run` of a script (`/nonexistent/proj/train.py`) compiling two
functions of `models/encoders/preprocessing_layers_for_the_long_pipeline.py`, each with a graph
break (lines 8 and 14); its paths were rewritten to /nonexistent/proj and the md5s recomputed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tui_helpers import make_app, press, settle, wait_loaded

from fxlens.tui.widgets import CompileTree

pytestmark = pytest.mark.tui
NESTED = Path(__file__).parent / "data" / "nested_session"
MODULE = "models/encoders/preprocessing_layers_for_the_long_pipeline.py"


@pytest.fixture
def elsewhere(tmp_path, monkeypatch):
    """The cwd is a folder that holds none of the session's files (not an ancestor of them)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _run(*keys: str):
    async def run_before(pilot) -> None:
        await wait_loaded(pilot.app, pilot)
        await press(pilot, *keys)
        await settle(pilot.app, pilot)

    return run_before


def test_snapshot_breaks_from_another_folder_80x24(elsewhere, snap_compare):
    # every row keeps its file end and line ("…_pipeline.py:8"), the tree's four frames differ
    app = make_app(NESTED, elsewhere)
    assert snap_compare(app, terminal_size=(80, 24), run_before=_run("3"))


async def test_breaks_rows_keep_file_and_line_and_tree_rows_differ(elsewhere):
    app = make_app(NESTED, elsewhere)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(app, pilot)
        await press(pilot, "3")
        table = app.query_one("#breaks-table")
        col = list(table.columns).index("where")
        width = table._column_widths()[col]
        drawn = [
            table._line(cells, table._column_widths(), [k == "where" for k in table.columns]).plain
            for _, cells in table._rows
        ]
        whole = [cells[col] for _, cells in table._rows]
        # relative to the script's folder, not absolute; cut from the left where the column is short
        assert whole == [f"{MODULE}:8", f"{MODULE}:14"]
        assert width < len(whole[0])
        for text, full in zip(drawn, whole, strict=True):
            shown = text[sum(w + 2 for w in table._column_widths()[:col] if w) :][:width]
            assert shown.startswith("…") and full.endswith(shown[1:].rstrip()), (shown, full)
        labels = [
            str(n.label).split("  ")[0] for n in app.query_one("#tree", CompileTree).root.children[0].children
        ]
        assert len(labels) == 4 and len(set(labels)) == 4, labels
        assert all(len(x) <= 24 for x in labels)  # "● " and 22 cells: whole at 80 columns


def test_text_report_from_another_folder_is_relative_to_the_script(elsewhere, capsys):
    from fxlens.cli import main

    assert main(["report", str(NESTED)]) == 0
    out = capsys.readouterr().out
    assert f"{MODULE}:8 " in out and f"{MODULE}:14 " in out
    assert "/nonexistent/proj/models" not in out
