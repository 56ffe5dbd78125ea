"""Helpers shared by the TUI tests (imported by name: pytest puts this folder on sys.path)."""

from __future__ import annotations

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
    from fxlens.session import Session

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
