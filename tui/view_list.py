"""A table of items over a detail pane: the shape of the breaks, recompiles and metrics views."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import VerticalScroll

from fxlens.tui.lazy_table import VimTable
from fxlens.tui.safe import escape
from fxlens.tui.viewbase import View, guarded
from fxlens.tui.widgets import Info


class ListView(View):
    """Rows from `rows()`, filtered by search; the highlighted row's `detail()` below.

    Params: key (the selected row's key), filter.
    """

    columns: tuple[str, ...] = ()
    #: columns, most important first: the first is what tells rows apart and keeps its width longest
    #: on a narrow terminal (see VimTable.priority)
    priority: tuple[str, ...] = ()
    #: columns cut from the left when narrow (locations: `…/model.py:57`, see VimTable.cut_left)
    cut_left: tuple[str, ...] = ("where",)
    empty = "nothing here"
    DEFAULT_CSS = """
    ListView > VimTable { height: 1fr; }
    ListView > .full { height: auto; max-height: 3; padding: 0 1; background: $boost; display: none; }
    ListView > .full.shown { display: block; }
    ListView > VerticalScroll { height: 1fr; border-top: solid $primary; padding: 0 1; }
    """

    def __init__(self) -> None:
        super().__init__()
        self.all_rows: list[tuple[str, tuple, str]] = []
        self.shown: list[tuple[str, tuple, str]] = []

    def compose(self) -> ComposeResult:
        yield VimTable(id=f"{self.view_id}-table")
        yield Info("", id=f"{self.view_id}-full", classes="full")  # the cursor row's cut cells, whole
        with VerticalScroll(id=f"{self.view_id}-scroll"):
            yield Info("", id=f"{self.view_id}-detail")

    def rows(self) -> list[tuple[str, tuple, str]]:
        """(key, cells, searchable text) of every row."""
        return []

    def detail(self, key: str) -> str:
        """Markup for the detail pane of row `key`."""
        return ""

    @guarded
    def set_data(self, data) -> None:
        super().set_data(data)
        self.all_rows = self.rows()
        self._fill()

    @property
    def table(self) -> VimTable:
        return self.query_one(f"#{self.view_id}-table", VimTable)

    def _fill(self) -> None:
        q = str(self.params.get("filter", "")).lower()
        self.shown = [r for r in self.all_rows if not q or q in r[2].lower()]
        table = self.table
        table.clear(columns=True)
        table.add_columns(*self.columns)
        table.priority = self.priority
        table.cut_left = self.cut_left
        table.add_rows((key, cells) for key, cells, _ in self.shown)  # plain str: Text per drawn line
        if not self.shown:
            self.query_one(f"#{self.view_id}-detail", Info).set(
                self.empty if not self.all_rows else "no row matches the search"
            )
        self._select(self.params.get("key"))

    def _select(self, key: str | None) -> None:
        keys = [r[0] for r in self.shown]
        if key in keys:
            self.table.move_cursor(row=keys.index(key), scroll=True)
        if self.shown:
            self._show_detail(self.shown[min(self.table.cursor_row, len(self.shown) - 1)][0])

    @guarded
    def _show_detail(self, key: str) -> None:
        self.params["key"] = key
        self._show_full()
        self.query_one(f"#{self.view_id}-detail", Info).set(self.detail(key))
        self.query_one(f"#{self.view_id}-scroll", VerticalScroll).scroll_home(animate=False)

    def _show_full(self) -> None:
        """Under the table, the whole text of the cursor row's cells that the columns cut."""
        full = self.query_one(f"#{self.view_id}-full", Info)
        cut = self.table.elided(self.table.cursor_row)
        full.set("  ".join(f"[b]{escape(label)}[/b] {escape(text)}" for label, text in cut))
        full.set_class(bool(cut), "shown")

    def on_resize(self) -> None:
        self.call_after_refresh(self._show_full)  # what is cut depends on the width

    @on(VimTable.RowHighlighted)
    def _row(self, event: VimTable.RowHighlighted) -> None:
        if event.data_table is self.table and event.row_key.value is not None:
            self._show_detail(str(event.row_key.value))

    @on(VimTable.HeaderSelected)
    def _header(self, event: VimTable.HeaderSelected) -> None:
        """Sort by the clicked column (numbers as numbers); a second click reverses."""
        if event.data_table is not self.table:
            return
        col = list(self.table.columns).index(event.column_key.value)
        reverse = self.params.get("sort") == col and not self.params.get("reverse")
        self.params["sort"], self.params["reverse"] = col, reverse
        self.all_rows.sort(key=lambda r: _sort_key(r[1][col] if col < len(r[1]) else ""), reverse=reverse)
        self._fill()

    def draw(self) -> None:
        if self.params.get("filter", "") != getattr(self, "_drawn_filter", ""):
            self._drawn_filter = self.params.get("filter", "")
            self._fill()
        else:
            self._select(self.params.get("key"))

    @guarded
    def search(self, query: str) -> int:
        self.params["filter"] = query
        self._drawn_filter = query
        self._fill()
        return len(self.shown)

    def export_text(self) -> str:
        detail = self.query_one(f"#{self.view_id}-detail", Info).plain
        return f"{self.title}\n\n{self.table.export_text()}\n\n{detail}\n"


def _sort_key(cell) -> tuple:
    text = cell.plain if isinstance(cell, Text) else str(cell)
    try:
        return (0, float(text), "")
    except ValueError:
        return (1, 0.0, text)
