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

    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "close")]
    # | key            | action |
    # | escape / q / ? | close  |

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


class SearchInput(Input):
    """The `/` search line; escape cancels."""

    BINDINGS = [Binding("escape", "cancel", "cancel search")]
    # | key    | action        |
    # | escape | cancel search |

    def action_cancel(self) -> None:
        self.app.close_search()


def help_text() -> Text:
    """Every key of the registry, by scope."""
    text = Text.assemble(("fxlens tui keys", "bold"), "  (escape closes)\n\n")
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
