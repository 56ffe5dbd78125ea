"""What every view shares: the loaded data (attributes down) and the Navigate message (up).

A view is shown at a location: its name plus params (compile id, rank, node, kernel...). The app
keeps those locations as back/forward history; views never switch views themselves, they post
`Navigate` and the app goes there.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import ClassVar

from textual.containers import Vertical
from textual.message import Message

from fxlens.trace.reader import Record, frame_of
from fxlens.trace.sanitize import clean, for_terminal
from fxlens.trace.session import Session
from fxlens.tui.loader import CompileEntry, RankEntry, Summary


@dataclass
class AppData:
    """Everything the views read: the session, its ranks' indexes, and the session-wide summary."""

    session: Session
    ranks: list[RankEntry] = field(default_factory=list)
    summary: Summary | None = None
    _kernel_cache: dict = field(default_factory=dict)
    _compile_index: dict = field(default_factory=dict)

    def rank(self, rank: int | None) -> RankEntry | None:
        """The rank entry for `rank` (None: the first)."""
        for r in self.ranks:
            if rank is None or r.model.rank == rank:
                return r
        return None

    def compile(self, rank: int | None, compile_id: str) -> CompileEntry | None:
        """The compile entry of `compile_id` on `rank` (None: the first rank)."""
        r = self.rank(rank)
        if r is None:
            return None
        index = self._compile_index.get(id(r))
        if index is None:  # built once per rank: views look compiles up per row
            index = {c.compile_id: c for f in r.frames for c in f.compiles}
            self._compile_index[id(r)] = index
        return index.get(compile_id)

    def compiles_of_frame(self, rank: int | None, compile_id: str) -> list[CompileEntry]:
        """Every compile of the frame `compile_id` belongs to, in order."""
        r = self.rank(rank)
        fid = frame_of(compile_id)
        if r is None:
            return []
        for f in r.frames:
            if f.frame_id == fid:
                return list(f.compiles)
        return []

    def kernel_payloads(self, rank: int | None, compile_id: str) -> list[dict]:
        """The fxlens_kernel JSON payloads of one compile (read from disk once, then cached)."""
        key = (rank, compile_id)
        if key not in self._kernel_cache:
            c = self.compile(rank, compile_id)
            out = []
            for rec in c.records if c else []:
                if rec.kind == "artifact:fxlens_kernel":
                    k = rec.payload_json()
                    if isinstance(k, dict):
                        out.append(clean(k))
            self._kernel_cache[key] = out
        return self._kernel_cache[key]

    def kernel_payload(self, kernel) -> dict:
        """The JSON payload of one `Kernel` record (its nodes and source), read on demand."""
        same = [
            k for k in self.session.kernels if k.rank == kernel.rank and k.compile_id == kernel.compile_id
        ]
        payloads = self.kernel_payloads(kernel.rank, kernel.compile_id)
        i = same.index(kernel) if kernel in same else -1
        return payloads[i] if 0 <= i < len(payloads) else {}


def record_text(rec: Record) -> str:
    """A record's payload for display: JSON pretty-printed, or the metadata when it has none."""
    if rec.payload_span is None:
        return json.dumps(rec.full_meta(), indent=2, default=str)  # JSON escapes control characters
    text = rec.payload()
    if text.lstrip().startswith(("{", "[")):
        try:
            return json.dumps(json.loads(text), indent=2)
        except ValueError:
            pass
    return for_terminal(text)


def guarded(method):
    """Run a view method; an exception becomes an error notification, never a crash of the app.

    A trace from another torch version can hold records shaped differently from what a view
    expects: the view then says it could not show them, and everything else keeps working.
    """

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except Exception as e:  # noqa: BLE001 - the point is to catch everything
            name = getattr(self, "title", "") or type(self).__name__
            self.app.notify(
                f"{name}: could not show this ({type(e).__name__}: {e})", severity="error", timeout=8
            )
            return None

    return wrapper


class Navigate(Message):
    """Posted by a view or the tree: go to `view` at `params` (recorded in history)."""

    def __init__(self, view: str, **params) -> None:
        super().__init__()
        self.view = view
        self.params = params


class View(Vertical):
    """Base of the views: `show(params)` draws a location, `export_text()` says what is on screen."""

    view_id: ClassVar[str] = ""
    title: ClassVar[str] = ""

    def __init__(self) -> None:
        super().__init__(id=f"view-{self.view_id}")
        self.data: AppData | None = None
        self.params: dict = {}
        self._drawn = False  # whether the view shows `params` for the current data

    def set_data(self, data: AppData) -> None:
        """Receive the loaded data (called by the app when loading finishes)."""
        self.data = data
        self._drawn = False

    @guarded
    def show(self, **params) -> None:
        """Draw the view at `params`; views override `draw`.

        Showing the location the view already shows draws nothing: switching back to a view keeps
        its scroll positions and cursors, and costs only the repaint.
        """
        params = {k: v for k, v in params.items() if v is not None}
        if self._drawn and params == self.params:
            return
        self.params = params
        if self.data is not None:
            self._drawn = False
            self.draw()
            self._drawn = True

    def draw(self) -> None:
        """Redraw from `self.data` and `self.params`."""

    def location(self) -> dict:
        """The params that bring this view back to what it shows now."""
        return dict(self.params)

    def export_text(self) -> str:
        """The view as plain text."""
        return ""

    def search(self, query: str) -> int:
        """Filter or highlight by `query`; returns the number of matches."""
        return 0

    def search_next(self) -> None:
        """Go to the next match of the last search."""

    def focus_main(self) -> None:
        """Focus the view's main widget."""
        for w in self.query("VimTable, CodeView"):
            if w.display:
                w.focus()
                return
