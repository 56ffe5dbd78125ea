"""The guards view: a compile's guard tree, the guard that failed highlighted, and a guard-set diff."""

from __future__ import annotations

from textual.app import ComposeResult

from fxlens.trace.sanitize import clean
from fxlens.tui import keys
from fxlens.tui.guardmatch import FailedGuard, failed_guards, guard_diff
from fxlens.tui.safe import escape
from fxlens.tui.viewbase import View, guarded
from fxlens.tui.widgets import CodeView, Info


class GuardsView(View):
    """Guards of one compile id; `d` diffs them against the frame's previous compile.

    Params: rank, compile_id, diff (bool), against (the other compile id of the diff).
    """

    view_id = "guards"
    title = "Guards"
    BINDINGS = keys.bindings("guards")
    # | key | action                                          |
    # | d   | diff with the previous compile of the same frame |
    # | f   | next failed guard                               |

    DEFAULT_CSS = """
    GuardsView #guards-title { height: auto; padding: 0 1; background: $boost; }
    GuardsView #guards-code { height: 1fr; }
    """

    def __init__(self) -> None:
        super().__init__()
        self.failed: list[FailedGuard] = []
        self.lines: list[str] = []
        self._next = 0

    def compose(self) -> ComposeResult:
        yield Info("Select a compile id in the tree, then press 2 for its guards.", id="guards-title")
        yield CodeView(id="guards-code")

    def draw(self) -> None:
        p = self.params
        title = self.query_one("#guards-title", Info)
        code = self.query_one("#guards-code", CodeView)
        if "compile_id" not in p:
            return
        rank, cid = p.get("rank"), p["compile_id"]
        guards = clean(self.data.session.guards(cid, rank))
        model = self.data.rank(rank)
        recompiles = model.model.recompiles if model else []
        self.failed = failed_guards(cid, recompiles, guards)
        where = f"rank {rank} · " if rank is not None else ""
        head = f"[b]{where}compile {cid}[/b] · {len(guards)} guards"
        if p.get("diff"):
            frame = [c.compile_id for c in self.data.compiles_of_frame(rank, cid)]
            i = frame.index(cid) if cid in frame else 0
            other = p.get("against") or (frame[i - 1] if i > 0 else (frame[1] if len(frame) > 1 else None))
            if other is None or other == cid:
                title.set(head + "\n[yellow]this frame compiled once: nothing to diff against[/yellow]")
                p.pop("diff", None)
            else:
                p["against"] = other
                old, new = (other, cid) if frame.index(other) < i else (cid, other)
                diff = guard_diff(self.data.session.guards(old, rank), self.data.session.guards(new, rank))
                changed = [(t, g) for t, g in diff if t != " "]
                self.lines = [f"{t} {g}" for t, g in diff]
                marks = {j: "removed" if t == "-" else "added" for j, (t, _) in enumerate(diff) if t != " "}
                title.set(
                    f"[b]guard diff {old} → {new}[/b] · {sum(t == '-' for t, _ in changed)} removed, "
                    f"{sum(t == '+' for t, _ in changed)} added  [dim](d: back to the guard list)[/dim]"
                )
                code.set_code("\n".join(self.lines), None, marks)
                first = min(marks, default=0)
                code.goto_line(first)
                return
        self.lines = guards
        marks = {f.line_index: "failed" for f in self.failed if f.line_index is not None}
        if self.failed:
            fails = "\n".join(
                f"[red]✗ failed → recompile {escape(f.recompile)}:[/red] {escape(f.reason)}"
                + ("" if f.line_index is not None else " [dim](no matching guard line)[/dim]")
                for f in self.failed
            )
            head += f"\n{fails}"
        else:
            head += " · [green]no later recompile failed these guards[/green]"
        title.set(head + "  [dim](d: diff with the previous compile, f: next failed)[/dim]")
        code.set_code("\n".join(guards) if guards else "(no guards logged for this compile)", None, marks)
        if marks:
            code.goto_line(min(marks))

    @guarded
    def action_toggle_diff(self) -> None:
        if "compile_id" not in self.params:
            return
        self.params["diff"] = not self.params.get("diff")
        self.params.pop("against", None)
        self.draw()

    def action_next_failed(self) -> None:
        idx = sorted(f.line_index for f in self.failed if f.line_index is not None)
        if not idx:
            return
        self._next = (self._next + 1) % len(idx)
        self.query_one("#guards-code", CodeView).goto_line(idx[self._next])

    def search(self, query: str) -> int:
        return self.query_one("#guards-code", CodeView).find(query)

    def search_next(self) -> None:
        self.query_one("#guards-code", CodeView).find_next()

    def export_text(self) -> str:
        return self.query_one("#guards-title", Info).plain + "\n\n" + "\n".join(self.lines) + "\n"
