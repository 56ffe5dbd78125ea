"""Snapshot tests (pytest-textual-snapshot): fixed 120x40 terminal, cursor blink off.

Only views whose content is deterministic are snapshotted (graph code, breaks, the key list);
compile times and guard object ids change from run to run. Update with `--snapshot-update`.
"""

from __future__ import annotations

import pytest
from tui_helpers import make_app, press, settle, wait_loaded

pytestmark = pytest.mark.tui
SIZE = (120, 40)


def _run(*keys: str):
    async def run_before(pilot) -> None:
        await wait_loaded(pilot.app, pilot)
        await press(pilot, *keys)
        await settle(pilot.app, pilot)

    return run_before


def test_snapshot_graph_view(in_root, tmp_path, snap_compare):
    # tree -> first compile -> the backend's ATen graph -> node table focused
    keys = ("t", "g", "j", "l", "j", "enter", "a", "a", "v", "j")
    assert snap_compare(make_app(in_root.session, tmp_path), terminal_size=SIZE, run_before=_run(*keys))


def test_snapshot_breaks_view(in_root, tmp_path, snap_compare):
    assert snap_compare(make_app(in_root.session, tmp_path), terminal_size=SIZE, run_before=_run("3"))


def test_snapshot_key_help(in_root, tmp_path, snap_compare):
    assert snap_compare(
        make_app(in_root.session, tmp_path), terminal_size=SIZE, run_before=_run("question_mark")
    )
