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
