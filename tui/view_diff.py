"""The Diff view: `fxlens tui A --diff B` (or `D` in a session): what is new, gone, moved or changed
in B against A, read-only, the same sections as `fxlens diff`.

Both reports are built in a worker thread (never on the event loop); the page is Rich tables of
plain Text, so nothing from a trace is read as markup.
"""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Header, Static

from fxlens.diff.compare import compare
from fxlens.diff.render import failures, render_text, sections, verdict
from fxlens.report.build import build_report
from fxlens.report.markup import visible
from fxlens.trace.session import Session
from fxlens.tui import keys
from fxlens.tui.widgets import KeyBar

_STYLE = {"+ new": "bold red", "- gone": "green", "~ changed": "yellow", "> moved": "cyan"}


class DiffScreen(Screen):
    """B against A: counts, graph breaks, recompile causes, graphs per function, guards, fallbacks.

    Pushed on top of A's session screen; escape comes back to it.
    """

    DEFAULT_CSS = """
    #diff-verdict { height: auto; padding: 0 1; }
    #diff-body { height: 1fr; padding: 0 1; }
    """
    BINDINGS = keys.bindings("diff")
    # | key      | action                  |
    # | escape   | back to the session     |
    # | j  k     | scroll down / up        |
    # | g  G     | top / bottom            |
    # | q        | quit                    |

    def __init__(self, a: Session, b: Session) -> None:
        super().__init__()
        self.a, self.b = a, b
        self.diff: dict | None = None
        self.sub_title = f"diff {a.path.name} → {b.path.name} · comparing…"

    @property
    def ready(self) -> bool:
        """Whether both reports are built and shown."""
        return self.diff is not None

    @property
    def plain(self) -> str:
        """What the page says, as the text of `fxlens diff` (tests, export)."""
        return render_text(self.diff) if self.diff is not None else ""

    def compose(self) -> ComposeResult:
        yield Header(icon="◉")
        yield Static(Text("comparing…"), id="diff-verdict")
        with VerticalScroll(id="diff-body"):
            yield Static(Text(""), id="diff-tables")
        yield KeyBar(id="keys")

    def on_mount(self) -> None:
        self._compare()

    @work(thread=True, exclusive=True)
    def _compare(self) -> None:
        diff = compare(build_report(self.a), build_report(self.b))
        self.app.call_from_thread(self._show, diff)

    def _show(self, diff: dict) -> None:
        self.diff = diff
        self.sub_title = f"diff {self.a.path.name} → {self.b.path.name}"
        style = "bold red" if diff["worse"] else "bold green"
        # a side that failed or compiled nothing is said first, as `fxlens diff` says it
        said = "\n".join([*failures(diff), verdict(diff)])
        self.query_one("#diff-verdict", Static).update(Text(said, style=style))
        parts: list = []
        for title, headers, rows in sections(diff, clip=None):
            table = Table(title=Text(title, style="bold"), title_justify="left", expand=False)
            for h in headers:
                table.add_column(Text(h))
            for row in rows:
                mark = str(row[0])
                table.add_row(*(Text(visible(c), style=_STYLE.get(mark, "")) for c in row))
            parts.append(table)
        for g in diff["guards"][:10]:
            text = Text(f"Guards of {visible(g['function'])} ({visible(g['file'])})\n", style="bold")
            for x in g["new"][:20]:
                text.append(f"  + {visible(x)}\n", style="red")
            for x in g["gone"][:20]:
                text.append(f"  - {visible(x)}\n", style="green")
            parts.append(text)
        self.query_one("#diff-tables", Static).update(Group(*parts))

    def action_close(self) -> None:
        self.app.pop_screen()

    def action_scroll_down(self) -> None:
        self.query_one("#diff-body", VerticalScroll).scroll_down(animate=False)

    def action_scroll_up(self) -> None:
        self.query_one("#diff-body", VerticalScroll).scroll_up(animate=False)

    def action_scroll_home(self) -> None:
        self.query_one("#diff-body", VerticalScroll).scroll_home(animate=False)

    def action_scroll_end(self) -> None:
        self.query_one("#diff-body", VerticalScroll).scroll_end(animate=False)
