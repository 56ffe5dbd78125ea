"""Reusable widgets: a lazy code pane, a tree with vim keys, a text pane that exports (the table with vim keys,
VimTable, is fxlens.tui.lazy_table's).

CodeView renders only the lines on screen (the Line API, like toolong) and highlights code in a
worker thread, so a 10,000-line graph opens at once and colours in a moment later.
"""

from __future__ import annotations

from collections import OrderedDict

from rich.style import Style
from rich.syntax import Syntax
from rich.text import Text
from textual import events, work
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Static, Tree

from fxlens.tui import keys

#: highlighted code kept for every code pane, (language, code) -> lines: revisiting a graph,
#: kernel or guard list shows its colours at once instead of re-running the highlighter
CACHE_HIGHLIGHTED = 48
_HIGHLIGHTED: OrderedDict[tuple[str, str], list[Text]] = OrderedDict()

MARK_STYLES = {
    "cursor": Style(bgcolor="grey23"),
    "failed": Style(bgcolor="dark_red", bold=True),
    "added": Style(color="green"),
    "removed": Style(color="red"),
    "match": Style(bgcolor="dark_goldenrod"),
}


class CodeView(ScrollView, can_focus=True):
    """Read-only code with line numbers; only visible lines are rendered.

    Attributes are set by the parent through `set_code`; line marks (failed guard, diff lines,
    the selected node) are styles from MARK_STYLES keyed by 0-based line.
    """

    BINDINGS = keys.bindings("code")
    # | key | action        |
    # | j/k | scroll down/up |
    # | g/G | top / bottom  |

    DEFAULT_CSS = """
    CodeView { background: $surface; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._code = ""
        self._plain: list[str] = []
        self._lines: list[Text] | None = None
        self._token = 0
        self.marks: dict[int, str] = {}
        self.language: str | None = None
        self._matches: list[int] = []
        self._match_at = -1

    @property
    def highlighted(self) -> bool:
        """Whether the colours are in (highlighting runs in a worker after `set_code`)."""
        return self._lines is not None or not self.language or not self._plain

    @property
    def lines(self) -> list[str]:
        """The plain text lines shown."""
        return self._plain

    def set_code(
        self, code: str, language: str | None = "python", marks: dict[int, str] | None = None
    ) -> None:
        """Show `code` from the top; `language` None shows it unhighlighted.

        The same code again keeps its lines and colours (only marks and scroll are reset); code
        highlighted recently takes its colours from the cache instead of the worker.
        """
        self.marks = dict(marks or {})
        self.scroll_to(0, 0, animate=False, immediate=True)
        if code == self._code and language == self.language:
            self.refresh()
            return
        self._code = code
        self._plain = code.split("\n") if code else []
        self._token += 1
        self.language = language
        self._lines = _HIGHLIGHTED.get((language, code)) if language and code else None
        if self._lines is not None:
            _HIGHLIGHTED.move_to_end((language, code))
        width = max((len(x) for x in self._plain), default=0) + 8
        self.virtual_size = Size(width, len(self._plain))
        self.refresh()
        if language and self._plain and self._lines is None:
            self._highlight(code, language, self._token)

    @work(thread=True, exclusive=True, group="highlight")
    def _highlight(self, code: str, language: str, token: int) -> None:
        text = Syntax(code, language, theme="monokai", background_color="default").highlight(code)
        lines = text.split("\n", allow_blank=True)
        self.app.call_from_thread(self._set_highlighted, lines, token, (language, code))

    def _set_highlighted(self, lines: list[Text], token: int, key: tuple[str, str]) -> None:
        _HIGHLIGHTED[key] = lines  # render_line copies a line before styling it: shared safely
        while len(_HIGHLIGHTED) > CACHE_HIGHLIGHTED:
            _HIGHLIGHTED.popitem(last=False)
        if token == self._token:
            self._lines = lines
            self.refresh()

    def set_marks(self, marks: dict[int, str]) -> None:
        """Replace the line marks and repaint."""
        self.marks = dict(marks)
        self.refresh()

    def goto_line(self, line: int) -> None:
        """Scroll so that 0-based `line` is near the top third of the pane."""
        self.scroll_to(y=max(0, line - max(2, self.size.height // 3)), animate=False, immediate=True)

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        i = scroll_y + y
        width = self.size.width
        if i >= len(self._plain):
            return Strip.blank(width, self.rich_style)
        body = self._lines[i].copy() if self._lines and i < len(self._lines) else Text(self._plain[i])
        mark = self.marks.get(i)
        line = Text.assemble((f"{i + 1:>5} ", "dim"), body)
        if mark:
            line.stylize(MARK_STYLES[mark])
            line.pad_right(max(0, scroll_x + width - line.cell_len))
            line.stylize(MARK_STYLES[mark], 6)
        segments = list(line.render(self.app.console))
        strip = Strip(segments).crop(scroll_x, scroll_x + width)
        return strip.extend_cell_length(width, self.rich_style) if strip.cell_length < width else strip

    def find(self, query: str) -> int:
        """Mark every line containing `query` (case-insensitive) and go to the first; returns the count."""
        q = query.lower()
        self._matches = [i for i, ln in enumerate(self._plain) if q and q in ln.lower()]
        self._match_at = -1
        kept = {k: v for k, v in self.marks.items() if v != "match"}
        self.set_marks({**{i: "match" for i in self._matches}, **kept})
        self.find_next()
        return len(self._matches)

    def find_next(self) -> None:
        """Go to the next line marked by `find`."""
        if self._matches:
            self._match_at = (self._match_at + 1) % len(self._matches)
            self.goto_line(self._matches[self._match_at])

    def text(self) -> str:
        """The whole text, for export."""
        return "\n".join(self._plain)


class CompileTree(Tree):
    """The compile-id tree with vim keys; children are created when a node is first expanded."""

    BINDINGS = keys.bindings("tree")
    # | key | action                 |
    # | j/k | down / up              |
    # | l/h | expand / collapse (or parent) |
    # | g/G | first / last           |

    def action_expand(self) -> None:
        node = self.cursor_node
        if node is not None and node.allow_expand:
            node.expand()

    def action_collapse(self) -> None:
        node = self.cursor_node
        if node is None:
            return
        if node.is_expanded and node.allow_expand:
            node.collapse()
        elif node.parent is not None and node.parent is not self.root:
            self.move_cursor(node.parent)

    def action_first(self) -> None:
        self.cursor_line = 0
        self.scroll_home(animate=False)

    def action_last(self) -> None:
        self.cursor_line = self.last_line
        self.scroll_end(animate=False)


class KeyBar(Widget):
    """The footer: the active keys on one line, repainted only when they change.

    Textual's Footer recomposes (mounts a widget per key, restyles, re-lays out the screen) on
    every focus change, which was most of what moving focus between the tree and a view cost.
    This bar is one line of text; a click on a key presses it.
    """

    COMPONENT_CLASSES = {"keybar--key", "keybar--palette"}
    DEFAULT_CSS = """
    KeyBar { dock: bottom; height: 1; background: $footer-background; color: $footer-foreground; }
    KeyBar > .keybar--key { color: $footer-key-foreground; text-style: bold; }
    KeyBar > .keybar--palette { color: $footer-description-foreground; }
    """
    PALETTE = "^p command palette "

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._text = Text()
        self._spans: list[tuple[int, int, str]] = []  # (start, end, key) for clicks

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)
        self._bindings_changed(self.screen)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen) -> None:
        if screen is not self.screen:
            return
        key_style = self.get_component_rich_style("keybar--key")
        text, spans = Text(no_wrap=True), []
        seen: set[str] = set()
        for _ns, binding, enabled, _tip in screen.active_bindings.values():
            if not binding.show or binding.action in seen:
                continue
            seen.add(binding.action)
            start = text.cell_len
            text.append(f" {self.app.get_key_display(binding)} ", key_style if enabled else "dim")
            text.append(f"{binding.description} ", "" if enabled else "dim")
            spans.append((start, text.cell_len, binding.key.split(",")[0]))
        if text.plain != self._text.plain:
            self._text, self._spans = text, spans
            self.refresh()

    def render(self) -> Text:
        width = self.size.width
        room = width - len(self.PALETTE)
        line = self._text.copy()
        line.truncate(max(0, room - 1), overflow="ellipsis", pad=True)
        if room > 20:
            line.append(" " + self.PALETTE, self.get_component_rich_style("keybar--palette"))
        return line

    @property
    def plain(self) -> str:
        """The keys shown, as text."""
        return self._text.plain

    def on_click(self, event: events.Click) -> None:
        if event.x >= self.size.width - len(self.PALETTE):
            self.app.action_command_palette()
            return
        for start, end, key in self._spans:
            if start <= event.x < end:
                self.app.simulate_key(key)
                return


class Info(Static):
    """A Static that remembers its markup, so a view can export what it shows as plain text."""

    def __init__(self, markup: str = "", **kwargs) -> None:
        super().__init__(markup, **kwargs)
        self.markup = markup

    def set(self, markup: str) -> None:
        """Show `markup` (dynamic parts must be escaped with fxlens.tui.safe.escape)."""
        if markup == self.markup:
            return  # an update re-lays out the screen (auto height): only when the text changes
        self.markup = markup
        self.update(markup)

    @property
    def plain(self) -> str:
        """The shown text without markup."""
        try:
            return Text.from_markup(self.markup).plain
        except Exception:  # markup errors never break an export
            return self.markup


__all__ = ["CodeView", "CompileTree", "Info", "KeyBar"]
