"""Helpers shared by the TUI tests (imported by name: pytest puts this folder on sys.path)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from fxlens.tui.app import FxlensApp


async def wait_loaded(app: FxlensApp, pilot, timeout: float = 30.0) -> None:
    """Wait until the worker has read every log and the views have their data."""
    waited = 0.0
    while not app.ready and waited < timeout:
        await pilot.pause(0.05)
        waited += 0.05
    assert app.ready, "the app did not finish loading"
    await pilot.pause()


def make_app(path: Path, tmp_path: Path) -> FxlensApp:
    """The app on `path`, exports into tmp_path, cursor blink off (deterministic snapshots)."""
    from fxlens.trace.session import Session

    return FxlensApp(Session.open(path), export_dir=tmp_path / "exports", cursor_blink=False)


async def settle(app: FxlensApp, pilot, timeout: float = 10.0) -> None:
    """Wait until every visible code pane is highlighted (for deterministic screenshots)."""
    from fxlens.tui.widgets import CodeView

    waited = 0.0
    while waited < timeout:
        panes = [c for c in app.screen.query(CodeView) if c.display and c.region.area]
        if all(c.highlighted for c in panes):
            break
        await pilot.pause(0.05)
        waited += 0.05
    await pilot.pause()


async def settled(app: FxlensApp, pilot, timeout: float = 30.0) -> None:
    """Wait until no worker is pending or running (graph parsing, highlighting, session loading).

    A worker hands its result to the UI with call_from_thread, which returns once the UI has run
    it: a finished worker's result is on screen.
    """
    from textual.worker import WorkerState

    waited = 0.0
    while busy := [w for w in app.workers if w.state in (WorkerState.PENDING, WorkerState.RUNNING)]:
        assert waited < timeout, f"workers still running: {busy}"
        await asyncio.sleep(0.01)
        waited += 0.01
    if waited:  # let the messages the results caused be handled
        await pilot.pause()


async def press(pilot, *keys: str) -> None:
    """Press `keys` one by one, each once the work of the one before is on screen."""
    for key in keys:
        await pilot.press(key)
        await settled(pilot.app, pilot)
