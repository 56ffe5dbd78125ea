"""A lazy table: rows are plain Python data, only the rows on screen are rendered.

Textual's DataTable measures and styles every row as it is added, which costs seconds for the
~10,000 compile ids of a large multi-rank trace. This table appends rows to a list, sizes its
columns from the header and the first rows, and renders the visible lines only (the Line API).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from fxlens.tui import keys

_SAMPLE = 1000  # rows looked at to size the columns
_MAX_COL = 60  # no column grows wider than this (long reasons are cut, export has them whole)
_GAP = 2


@dataclass(frozen=True)
class RowKey:
    """The key a row was added with (`.value`, as DataTable spells it)."""

    value: str | None


@dataclass(frozen=True)
class ColumnKey:
    """A column's key (`.value`)."""

    value: str


class VimTable(ScrollView, can_focus=True):
    """A row-cursor table with vim keys; `add_row` is a list append, rendering is per visible line.

    Posts `RowHighlighted` when the cursor moves, `HeaderSelected` on a header click.
    """

    BINDINGS = keys.bindings("table") + [
        Binding(key, action, what, show=False)
        for key, action, what in (
            ("up", "cursor_up", "up"),
            ("down", "cursor_down", "down"),
            ("pageup", "page_up", "page up"),
            ("pagedown", "page_down", "page down"),
            ("home", "scroll_top", "first row"),
            ("end", "scroll_bottom", "last row"),
            ("left", "cursor_left", "scroll left"),
            ("right", "cursor_right", "scroll right"),
        )
    ]
    # | key           | action                 |
    # | j/k, up/down  | row down / up          |
    # | h/l, left/right | scroll left / right  |
    # | g/G, home/end | first / last row       |
    # | pgup/pgdn     | page up / down         |

    DEFAULT_CSS = """
    VimTable { background: $surface; padding: 0 0 0 1; }
    """

    class RowHighlighted(Message):
        """The cursor moved to a row."""

        def __init__(self, data_table: VimTable, row_key: RowKey, cursor_row: int) -> None:
            super().__init__()
            self.data_table = data_table
            self.row_key = row_key
            self.cursor_row = cursor_row

        @property
        def control(self) -> VimTable:
            return self.data_table

    class HeaderSelected(Message):
        """A column header was clicked."""

        def __init__(self, data_table: VimTable, column_key: ColumnKey) -> None:
            super().__init__()
            self.data_table = data_table
            self.column_key = column_key

        @property
        def control(self) -> VimTable:
            return self.data_table

    def __init__(self, *, id: str | None = None, classes: str | None = None, **_ignored) -> None:
        super().__init__(id=id, classes=classes)
        self.columns: dict[str, str] = {}  # key -> label
        # column keys, most important first: when the table is wider than its pane, columns give up
        # width from the end of this list (unlisted ones first), so the column that tells rows apart
        # stays readable at 80x24; a cut cell ends in "…" and `elided()` has it whole
        self.priority: tuple[str, ...] = ()
        # column keys whose cells are cut from the left ("…/pkg/model.py:57"): a location's end
        # (file and line) tells rows apart, its folder prefix rarely does
        self.cut_left: tuple[str, ...] = ()
        self._fit_for: tuple[int, list[int]] | None = None
        self._rows: list[tuple[str | None, tuple]] = []
        self._widths: list[int] | None = None
        self.cursor_row = 0

    # -- data ----------------------------------------------------------------------------------
    def clear(self, columns: bool = False) -> None:
        """Remove every row (and the columns when `columns`)."""
        self._rows = []
        if columns:
            self.columns = {}
        self.cursor_row = 0
        self._changed()

    def add_column(self, label: str, key: str | None = None) -> None:
        """Add a column."""
        self.columns[key or label] = label
        self._changed()

    def add_columns(self, *labels: str) -> None:
        """Add columns keyed by their labels."""
        for label in labels:
            self.columns[label] = label
        self._changed()

    def add_row(self, *cells, key: str | None = None) -> None:
        """Append a row (cells are str or rich Text); nothing is measured until it is drawn."""
        self._rows.append((key, cells))
        self._changed()

    def add_rows(self, rows: Iterable[tuple[str | None, tuple]]) -> None:
        """Append (key, cells) rows at once: one size update and one repaint for all of them."""
        self._rows.extend(rows)
        self._changed()

    @property
    def row_count(self) -> int:
        return len(self._rows)

    def get_row(self, key: str) -> tuple:
        """The cells of the row with `key`."""
        return next(cells for k, cells in self._rows if k == key)

    def _changed(self) -> None:
        self._widths = None
        self._fit_for = None
        size = Size(self.virtual_size.width, len(self._rows) + 1)
        if size != self.virtual_size:  # a new virtual size re-lays out the screen: only when it changes
            self.virtual_size = size
        self.refresh()

    def _natural_widths(self) -> list[int]:
        if self._widths is None:
            widths = [len(label) for label in self.columns.values()]
            for _, cells in self._rows[:_SAMPLE]:
                for i, c in enumerate(cells[: len(widths)]):
                    widths[i] = max(widths[i], min(_MAX_COL, _cell_len(c)))
            self._widths = widths
            self._fit_for = None
        return self._widths

    def _column_widths(self) -> list[int]:
        """The natural widths, shrunk by priority to the pane's width (never below a column's floor)."""
        natural = self._natural_widths()
        avail = self.size.width - 1  # the left padding
        if self._fit_for is None or self._fit_for[0] != avail:
            self._fit_for = (avail, fit_widths(natural, list(self.columns), self.priority, avail))
            widths = self._fit_for[1]
            size = Size(sum(w + _GAP for w in widths if w) + 1, len(self._rows) + 1)
            if size != self.virtual_size:
                self.virtual_size = size
        return self._fit_for[1]

    def elided(self, row: int) -> list[tuple[str, str]]:
        """(column label, whole text) of the cells of `row` that are cut on screen."""
        if not 0 <= row < len(self._rows):
            return []
        widths = self._column_widths()
        out = []
        for label, c, w in zip(self.columns.values(), self._rows[row][1], widths, strict=False):
            if _cell_len(c) > w:
                out.append((label, c.plain if isinstance(c, Text) else str(c)))
        return out

    # -- cursor --------------------------------------------------------------------------------
    def move_cursor(self, row: int | None = None, column: int | None = None, scroll: bool = True) -> None:
        """Put the cursor on `row` (clamped) and post RowHighlighted."""
        if row is None or not self._rows:
            return
        row = max(0, min(row, len(self._rows) - 1))
        self.cursor_row = row
        if scroll:
            self._scroll_to_cursor()
        self.refresh()
        self.post_message(self.RowHighlighted(self, RowKey(self._rows[row][0]), row))

    def _scroll_to_cursor(self) -> None:
        visible = max(1, self.size.height - 1)
        top = self.scroll_offset.y
        if self.cursor_row < top:
            self.scroll_to(y=self.cursor_row, animate=False, immediate=True)
        elif self.cursor_row >= top + visible:
            self.scroll_to(y=self.cursor_row - visible + 1, animate=False, immediate=True)

    def action_cursor_down(self) -> None:
        self.move_cursor(self.cursor_row + 1)

    def action_cursor_up(self) -> None:
        self.move_cursor(self.cursor_row - 1)

    def action_page_down(self) -> None:
        self.move_cursor(self.cursor_row + max(1, self.size.height - 2))

    def action_page_up(self) -> None:
        self.move_cursor(self.cursor_row - max(1, self.size.height - 2))

    def action_scroll_top(self) -> None:
        self.move_cursor(0)

    def action_scroll_bottom(self) -> None:
        self.move_cursor(len(self._rows) - 1)

    def action_cursor_left(self) -> None:
        self.scroll_to(x=max(0, self.scroll_offset.x - 8), animate=False)

    def action_cursor_right(self) -> None:
        self.scroll_to(x=self.scroll_offset.x + 8, animate=False)

    def on_click(self, event: events.Click) -> None:
        if event.y == 0:
            x = event.x + self.scroll_offset.x
            for key, w in zip(self.columns, self._column_widths(), strict=False):
                if not w:
                    continue
                if x < w + _GAP:
                    self.post_message(self.HeaderSelected(self, ColumnKey(key)))
                    return
                x -= w + _GAP
            return
        self.move_cursor(self.scroll_offset.y + event.y - 1, scroll=False)

    # -- rendering -----------------------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        width = self.size.width
        widths = self._column_widths()
        scroll_x, scroll_y = self.scroll_offset
        base = self.rich_style
        if y == 0:
            line = self._line(list(self.columns.values()), widths)  # (headers fit: cut at the end)
            line.stylize(Style(bold=True, underline=True))
            style = base
        else:
            i = scroll_y + y - 1
            if i >= len(self._rows):
                return Strip.blank(width, base)
            left = [k in self.cut_left for k in self.columns]
            line = self._line(self._rows[i][1], widths, left)
            if i == self.cursor_row:
                style = base + Style(reverse=True) if self.has_focus else base + Style(bgcolor="grey30")
            elif i % 2:
                style = base + Style(bgcolor="grey11")
            else:
                style = base
        segments = [
            Segment(s.text, style + s.style if s.style else style) for s in line.render(self.app.console)
        ]
        strip = Strip(segments).crop(scroll_x, scroll_x + width)
        return strip.extend_cell_length(width, style)

    @staticmethod
    def _line(cells, widths: list[int], cut_left: list[bool] | None = None) -> Text:
        line = Text()
        for i, (c, w) in enumerate(zip(cells, widths, strict=False)):
            if not w:  # a column hidden to fit a narrow pane (its text is in `elided`)
                continue
            t = c.copy() if isinstance(c, Text) else Text(str(c))
            if cut_left and i < len(cut_left) and cut_left[i] and t.cell_len > w:
                t = Text("…") + t[len(t) - (w - 1) :] if w > 1 else Text("…")
            t.truncate(w, overflow="ellipsis")
            t.pad_right(w - t.cell_len + _GAP)
            line.append_text(t)
        return line

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

    # -- export ----------------------------------------------------------------------------------
    def _rows_plain(self) -> list[list[str]]:
        return [[c.plain if isinstance(c, Text) else str(c) for c in cells] for _, cells in self._rows]

    def export_text(self) -> str:
        """The whole table as aligned plain text (every row, cells uncut)."""
        cols = list(self.columns.values())
        rows = self._rows_plain()
        widths = [max([len(c)] + [len(r[i]) for r in rows if i < len(r)]) for i, c in enumerate(cols)]
        out = ["  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=False)).rstrip()]
        out += ["  ".join(x.ljust(w) for x, w in zip(r, widths, strict=False)).rstrip() for r in rows]
        return "\n".join(out)


def _cell_len(c) -> int:
    return c.cell_len if isinstance(c, Text) else len(str(c))


def fit_widths(natural: list[int], keys: list[str], priority: tuple[str, ...], avail: int) -> list[int]:
    """Column widths that fit `avail` cells, the least important column giving way first.

    Each column shrinks to a floor (the most important column, which tells rows apart, to 24 cells,
    the next to 16, the others to 6) from the least important up; if the floors still do not fit,
    columns after the first two are hidden (width 0) from the least important up; cells left over
    go back to the most important columns. Only if even that does not fit does the table scroll
    sideways.
    """
    n = len(natural)
    if sum(natural) + _GAP * n <= avail:
        return list(natural)
    rank = {k: i for i, k in enumerate(priority)}
    # most important first; unlisted columns after the listed ones, rightmost least important
    order = sorted(range(n), key=lambda i: (rank.get(keys[i], len(priority)), i))
    floors = [min(natural[i], 6) for i in range(n)]
    for pos, i in enumerate(order[:2]):
        floors[i] = min(natural[i], (24, 16)[pos])
    widths = list(floors)

    def used() -> int:
        return sum(w + _GAP for w in widths if w)

    for i in reversed(order[2:]):  # hide the least important columns until the floors fit
        if used() <= avail:
            break
        widths[i] = 0
    spare = avail - used()
    for i in order:  # what is left goes back to the most important columns first
        if spare <= 0:
            break
        if widths[i] or i in order[:2]:
            give = min(spare, natural[i] - widths[i])
            widths[i] += give
            spare -= give
    return widths
