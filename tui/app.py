"""`fxlens tui [PATH]`: the Textual app that browses a session or a TORCH_TRACE directory/log.

The app itself is thin: its base screen is a `SessionScreen` on the session `fxlens tui` opened
(tui/session_screen.py); a bisect or minify run's trace opens in another one pushed on top. What
the app exposes (`current_view`, `view()`, `data`, `ready`...) is that of the session on top.
"""

from __future__ import annotations

import argparse
import gc
import os
import time
from pathlib import Path

from textual import events
from textual.app import App, SystemCommand
from textual.screen import Screen

from fxlens import config
from fxlens.errors import FxlensError
from fxlens.live.follow import Follow, run_in_progress
from fxlens.trace.session import Session, latest_session
from fxlens.tui.session_screen import SessionScreen
from fxlens.tui.viewbase import AppData, View


class FxlensApp(App):
    """Browse a Session: compile-id tree, graphs, guards, breaks, recompiles, kernels, results, ranks.

    The keys are those of SessionScreen (`?` lists them all).
    """

    TITLE = "fxlens"
    CSS_PATH = "app.tcss"

    def __init__(
        self,
        session: Session,
        export_dir: str | Path | None = None,
        cursor_blink: bool = True,
        diff_with: Session | None = None,
        follow: Follow | None = None,
    ) -> None:
        super().__init__()
        self.session = session
        #: a job still writing the session's trace (see SessionScreen.follow)
        self.follow = follow
        #: `fxlens tui A --diff B`: B; the Diff page opens at start and with `D`
        self.diff_with = diff_with
        self.export_dir = Path(export_dir) if export_dir else Path.cwd()
        self.cursor_blink = cursor_blink
        # a debugging tool answers at once: no sliding tab underline or smooth scrolling, which
        # cost repaints per key (TEXTUAL_ANIMATIONS=full in the environment brings them back)
        if "TEXTUAL_ANIMATIONS" not in os.environ:
            self.animation_level = "none"

    def get_default_screen(self) -> Screen:
        return SessionScreen(self.session, follow=self.follow)

    # -- garbage collection at idle time ---------------------------------------------------------
    # A full (generation 2) collection scans every object that survived since the last one: the
    # strips and caches Textual keeps for what it drew, tens of thousands after a few dozen keys,
    # 50-150 ms on this box. Left automatic, one lands in a keystroke every ~15 keys. So the young
    # generations are collected as usual (cheap), full collections run when no key has come for
    # IDLE_GC_S, and what survives one is frozen (gc.freeze) so the next one scans only the new.

    #: seconds without input before the app runs a full garbage collection
    IDLE_GC_S = 1.0

    def on_mount(self) -> None:
        self._gc_threshold = gc.get_threshold()
        gc.set_threshold(self._gc_threshold[0], self._gc_threshold[1], 1 << 30)
        self._last_input = time.monotonic()
        self.idle_gc_ms: list[float] = []  # how long each idle collection took (the bench reports it)
        self.set_interval(self.IDLE_GC_S / 2, self._collect_when_idle)
        if self.diff_with is not None:
            self.call_after_refresh(self.main.action_diff)

    def on_unmount(self) -> None:
        gc.set_threshold(*self._gc_threshold)
        gc.unfreeze()

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key | events.MouseDown | events.MouseScrollDown | events.MouseScrollUp):
            self._last_input = time.monotonic()
        await super().on_event(event)

    def _collect_when_idle(self) -> None:
        if time.monotonic() - self._last_input < self.IDLE_GC_S or gc.get_count()[2] == 0:
            return  # typing, or nothing reached the old generation since the last collection
        if not all(s.ready for s in self.screen_stack if isinstance(s, SessionScreen)):
            return  # a loader is filling memory (and freezes it when done): nothing to win yet
        t0 = time.perf_counter()
        gc.collect()
        gc.freeze()
        self.idle_gc_ms.append((time.perf_counter() - t0) * 1000)

    def release_frozen(self) -> None:
        """Let the next idle collection free what a closed screen held (it was frozen with the rest)."""
        gc.unfreeze()

    @property
    def main(self) -> SessionScreen:
        """The session screen on top (below any modal page or palette)."""
        return next(s for s in reversed(self.screen_stack) if isinstance(s, SessionScreen))

    # -- the session on top, for tests, the bench and the palette ------------------------------
    @property
    def data(self) -> AppData:
        return self.main.data

    @property
    def ready(self) -> bool:
        """Whether the session on top has read every log."""
        return self.main.ready

    @property
    def current_view(self) -> str:
        return self.main.current_view

    @property
    def last_export(self) -> Path | None:
        return self.main.last_export

    @property
    def timings(self) -> dict[str, float]:
        return self.main.timings

    def view(self, name: str | None = None) -> View:
        """The view widget `name` (default: the current one) of the session on top."""
        return self.main.view(name)

    def get_system_commands(self, screen):
        yield from super().get_system_commands(screen)
        for title, help, callback in self.main.system_commands():
            yield SystemCommand(title, help, callback)


# -- the `fxlens tui` command ------------------------------------------------------------------
def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of `fxlens tui`."""
    parser.add_argument(
        "path",
        nargs="?",
        metavar="PATH",
        help="a session, a TORCH_TRACE directory or one log (default: the latest session under "
        "FXLENS_SESSIONS_DIR, .fxlens/sessions)",
    )
    parser.add_argument(
        "--follow",
        action="store_true",
        help="PATH is still being written (a running job's session or TORCH_TRACE dir): show what "
        "compiles now and refresh as the trace grows (automatic for a running `fxlens run` session)",
    )
    parser.add_argument(
        "--diff",
        metavar="B",
        help="open the Diff page: PATH (A) against B, a session or TORCH_TRACE dir/log (as `fxlens diff A B`)",
    )


def resolve(path: str | None, follow: bool = False) -> Session:
    """The Session `fxlens tui [PATH]` opens; FxlensError (one line) when there is none. Followed,
    a directory may have no log yet (the job has not compiled anything so far)."""
    if path is None:
        root = config.load().sessions_dir
        latest = latest_session(root) if root.is_dir() else None
        if latest is None:
            raise FxlensError(f"no session under {root}: run `fxlens run SCRIPT` first, or pass a PATH")
        path = str(latest)
    try:
        return Session.open(path)
    except FxlensError:
        p = Path(path)
        if follow and p.is_dir() and not any(p.glob("*.log")):
            return Session(p, "trace_dir", [], {})
        raise


def main(args: argparse.Namespace) -> int:
    """Validate PATH before anything is drawn, then run the app."""
    follow = bool(getattr(args, "follow", False))
    session = resolve(getattr(args, "path", None), follow)
    other = Session.open(args.diff) if getattr(args, "diff", None) else None
    live = Follow(session.path) if follow or run_in_progress(session.path) else None
    FxlensApp(session, diff_with=other, follow=live).run()
    return 0


__all__ = ["FxlensApp", "add_arguments", "main", "resolve"]
