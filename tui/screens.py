"""The modal text page (`?` keys, `!` what was skipped) and the `/` search line."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from fxlens.tui import keys


class TextScreen(ModalScreen):
    """A modal page of text (the key list, what was skipped); escape, q or ? closes it."""

    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "close"), *keys.bindings("page")]
    # | key                 | action          |
    # | escape / q / ?      | close           |
    # | j/k, up/down        | scroll one line |
    # | ctrl+d/u, pgdn/pgup | scroll one page |
    # | g/G, home/end       | top / bottom    |

    def __init__(self, text: Text) -> None:
        super().__init__()
        self.text = text

    @property
    def plain(self) -> str:
        """The page without styles."""
        return self.text.plain

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(self.text, id="text")

    def action_scroll_page(self, how: str) -> None:
        """Scroll the page: the keys of a pager (`less`), so a long key list reads at 80x24."""
        page = self.query_one(VerticalScroll)
        {
            "down": page.scroll_down,
            "up": page.scroll_up,
            "page_down": page.scroll_page_down,
            "page_up": page.scroll_page_up,
            "home": page.scroll_home,
            "end": page.scroll_end,
        }[how](animate=False)


class SearchInput(Input):
    """The `/` search line; escape cancels."""

    BINDINGS = [Binding("escape", "cancel", "cancel search")]
    # | key    | action        |
    # | escape | cancel search |

    def action_cancel(self) -> None:
        self.app.close_search()


def help_text() -> Text:
    """Every key of the registry, by scope."""
    text = Text.assemble(("fxlens tui keys", "bold"), "  (j/k scroll, escape closes)\n\n")
    for scope, k, what in keys.help_rows():
        text.append(f"  {scope:<8} ", "dim")
        text.append(f"{k:<30}", "bold")
        text.append(f"{what}\n")
    return text


def skipped_text(skipped: list[str]) -> Text:
    """What reading the logs skipped (torn lines, records without payload, unreadable logs)."""
    text = Text("Skipped while reading\n\n", style="bold")
    for s in skipped:
        text.append(f"• {s}\n", style="")
    if not skipped:
        text.append("Nothing was skipped: every line was readable.", style="")
    return text
