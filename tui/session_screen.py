"""One session on screen: the compile-id tree, the views, history, search and export.

The app's base screen browses the session `fxlens tui` opened; a bisect or minify run's trace
opens in another SessionScreen pushed on top (escape comes back, with the first one as it was).
The screen reads its logs in a worker thread, one rank at a time: each rank joins the tree as soon
as it is read. Views get the loaded data from the screen (attributes down) and ask for navigation
with `Navigate` messages (messages up); the screen keeps back/forward history.
"""

from __future__ import annotations

import gc
import re
import time
from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import ContentSwitcher, Header, Input, Tab, Tabs, Tree

from fxlens.errors import FxlensError
from fxlens.live.follow import Follow
from fxlens.trace.session import Session
from fxlens.tui import keys
from fxlens.tui import tree as tree_mod
from fxlens.tui.loader import is_graph_kind, load_ranks, summarise
from fxlens.tui.safe import escape
from fxlens.tui.screens import SearchInput, TextScreen, help_text, skipped_text
from fxlens.tui.view_findings import BreaksView, RecompilesView
from fxlens.tui.view_graph import GraphView
from fxlens.tui.view_guards import GuardsView
from fxlens.tui.view_kernels import KernelsView
from fxlens.tui.view_memory import MemoryView
from fxlens.tui.view_metrics import MetricsView, RanksView
from fxlens.tui.view_results import ArtifactView, OpenRun, ResultsView
from fxlens.tui.view_tlparse import OutputCodeView, StackTrieView
from fxlens.tui.viewbase import AppData, Navigate, View, guarded
from fxlens.tui.widgets import CompileTree, Info, KeyBar

VIEW_CLASSES: tuple[type[View], ...] = (
    GraphView,
    GuardsView,
    BreaksView,
    RecompilesView,
    KernelsView,
    ResultsView,
    MetricsView,
    RanksView,
    ArtifactView,
    StackTrieView,
    OutputCodeView,
    MemoryView,
)
VIEW_ORDER = tuple(v.view_id for v in VIEW_CLASSES)
TABS_ON_DEMAND = ("memory",)  # tabs shown only where their view has rows (their keys still go there)
# which view opens an artifact record of a compile id
FOLLOW_INTERVAL_S = 0.5  # how often a followed trace is polled (a poll reads only what was appended)
_ARTIFACT_VIEW = {
    "dynamo_cpp_guards_str": "guards",
    "artifact:dynamo_graph_break_reason": "breaks",
    "artifact:recompile_reasons": "recompiles",
    "compilation_metrics": "metrics",
    "artifact:fxlens_kernel": "kernels",
    "inductor_output_code": "output",
}


class SessionScreen(Screen):
    """Browse one Session: compile-id tree, graphs, guards, breaks, recompiles, kernels, results, ranks.

    `parent` is the screen this one was opened from (a bisect session for one of its runs).
    """

    BINDINGS = keys.bindings("app") + keys.view_key_bindings()
    # | key            | action                            |
    # | 1..9           | graph, guards, breaks, recompiles, kernels, results, metrics, ranks, artifact |
    # | 0  c           | stack trie, inductor output code  |
    # | /  n           | search / next match               |
    # | [  ]           | back / forward (also alt+left/right) |
    # | x              | export the current view as text   |
    # | t  v           | focus the tree / the view         |
    # | !              | what was skipped while reading    |
    # | escape         | back to the session a run was opened from |
    # | ?              | list every key                    |
    # | ctrl+p         | command palette                   |
    # | D              | diff against the --diff session   |
    # | q              | quit                              |

    def __init__(
        self,
        session: Session,
        parent: SessionScreen | None = None,
        at: tuple[str, dict] | None = None,
        follow: Follow | None = None,
    ) -> None:
        super().__init__()
        self.session = session
        #: a job still writing this trace (`fxlens tui --follow`, or a running `fxlens run` session):
        #: a worker polls it, shows what compiles now, and re-reads the trace as it grows
        self.follow = follow
        self._follow_busy = False
        self.parent_screen = parent
        self.open_at = at  # (view, params) to go to once the logs are read
        self.data = AppData(session)
        self.ready = False
        self.current_view = "graph"
        self.history: list[tuple[str, dict]] = []
        self.future: list[tuple[str, dict]] = []
        self.last_export: Path | None = None
        self.last_search = ""
        self.skipped: list[str] = []
        self._search_target = "view"
        self.timings: dict[str, float] = {"start": time.perf_counter()}
        self.sub_title = f"{self._path_label()} · reading {len(session.logs)} log(s)…"

    def _path_label(self) -> str:
        if self.parent_screen is None:
            return self.session.path.name
        return f"{self.parent_screen._path_label()} › {self.session.path.name}"

    # -- layout ------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Header(icon="◉")
        yield Info("", id="notice")
        yield Info("", id="live")
        with Horizontal(id="main"):
            yield CompileTree("session", id="tree")
            with Vertical(id="right"):
                yield Tabs(
                    *(Tab(f"{keys.VIEW_KEYS[v.view_id]} {v.title}", id=v.view_id) for v in VIEW_CLASSES),
                    id="tabs",
                )
                # every view stays mounted; switching views only changes which one is displayed
                with ContentSwitcher(id="views", initial="view-graph"):
                    for cls in VIEW_CLASSES:
                        yield cls()
        yield SearchInput(placeholder="search (enter: go, escape: cancel)", id="search")
        yield KeyBar(id="keys")

    def on_mount(self) -> None:
        tree = self.query_one("#tree", CompileTree)
        tree.show_root = False
        tree.focus()
        self.query_one("#search", SearchInput).cursor_blink = self.app.cursor_blink
        self._views = {v.view_id: v for v in self.query(View)}
        # one line per log at once, so the screen is up while the logs are still being read
        self._placeholders = {
            str(log): tree_mod.add_placeholder(tree, log) for log in self.session.ordered_logs
        }
        self.load()

    def view(self, name: str | None = None) -> View:
        """The view widget `name` (default: the current one)."""
        return self._views[name or self.current_view]

    # -- loading (worker thread) -------------------------------------------------------------
    @work(thread=True, exclusive=True, group="load")
    def load(self) -> None:
        # A large trace is millions of small objects that live as long as the app: the cyclic GC
        # would rescan them while loading and later stall a keystroke for ~0.5 s; freeze them.
        gc.disable()
        error = None
        summary = None
        try:
            for i, entry in enumerate(load_ranks(self.session)):
                self.app.call_from_thread(self._add_rank, entry, i)
            summary = summarise(self.session)
        except Exception as e:  # a log we cannot read must not take the app down
            error = f"could not read {self.session.path}: {type(e).__name__}: {e}"
        finally:
            gc.freeze()
            gc.enable()
        self.app.call_from_thread(self._loaded, summary, error)

    def _add_rank(self, entry, i: int) -> None:
        self.data.ranks.append(entry)
        node = self._placeholders.pop(entry.model.log, None)
        tree_mod.add_rank(self.query_one("#tree", CompileTree), entry, expand=i == 0, node=node)
        self.sub_title = f"{self._path_label()} · read {i + 1}/{len(self.session.logs)} log(s)…"
        self.timings.setdefault("first_rank", time.perf_counter())

    def _loaded(self, summary, error: str | None, keep: tuple[str, dict] | None = None) -> None:
        self.data.summary = summary
        for node in self._placeholders.values():  # logs that could not be read at all
            node.set_label(
                Text.assemble((str(node.label).split("  ")[0], "bold"), ("  unreadable (!)", "red"))
            )
        self._placeholders.clear()
        for v in self.query(View):
            if summary is not None:
                v.set_data(self.data)
            else:
                v.data = None
        for name in TABS_ON_DEMAND:
            shown = getattr(self.view(name), "all_rows", None) or self.current_view == name
            getattr(self.query_one("#tabs", Tabs), "show" if shown else "hide")(name)
        skipped = list(summary.skipped) if summary else []
        if error:
            skipped.insert(0, error)
        self.skipped = skipped
        notice = self.query_one("#notice", Info)
        # a re-read while following: the notice says what this read found, nothing from the last one
        notice.set("")
        notice.remove_class("shown")
        # a job still writing: verdicts on a partial trace ("no graph" mid-compile) would mislead
        partial = self.follow is not None and not self.follow.ended
        heads = summary.headlines if summary else []
        # a log cut mid-record outranks any skipped line: every count shown is short of the job's
        cut = next((h for h in heads if h.get("kind") == "truncated"), None)
        if cut:
            notice.set(f"⚠ {escape(cut['message'])} — press ! for details")
            notice.add_class("shown")
        elif skipped:
            more = f" (+{len(skipped) - 1} more)" if len(skipped) > 1 else ""
            notice.set(f"⚠ skipped while reading: {escape(skipped[0])}{more} — press ! for details")
            notice.add_class("shown")
        if heads and not skipped and not partial:  # the verdict the tables would hide (no graph, ...)
            more = f" (+{len(heads) - 1} more)" if len(heads) > 1 else ""
            notice.set(f"!! {escape(heads[0]['message'])}{more} fix: {escape(heads[0]['fix'])}")
            notice.add_class("shown")
        runs = self.view("results").runs
        if runs:  # a bisect/minify session: each child run kept its own trace
            tree_mod.add_runs(self.query_one("#tree", CompileTree), runs)
        if not self.session.logs:
            if runs:
                notice.set(
                    "⚠ results only: each run kept its own trace — enter on a run in the tree opens it"
                )
            elif partial:
                notice.set("waiting for the job's first trace records")
            else:
                notice.set("⚠ this session has no TORCH_TRACE logs: the script compiled nothing")
            notice.add_class("shown")
        # the views' rows live as long as the session: out of the cyclic GC's young generations,
        # so a collection during a keystroke scans what the key made, not the whole session
        gc.freeze()
        ranks = self.session.ranks if summary else []
        n = sum(len(f.compiles) for r in self.data.ranks for f in r.frames)
        self.sub_title = f"{self._path_label()} · {len(ranks)} rank(s) · {n} compile(s)"
        self.ready = True
        self.timings["loaded"] = time.perf_counter()
        if self.follow is not None:
            self.sub_title += " · following" if not self.follow.ended else " · run ended"
            if self.follow.failed:  # said above everything: what is shown is all the run wrote
                notice.set(f"⚠ the run failed: {escape(self.follow.ending or '')} — this is what it wrote")
                notice.add_class("shown")
            if not self.follow.ended and not hasattr(self, "_follow_timer"):
                self._follow_timer = self.set_interval(FOLLOW_INTERVAL_S, self._follow_tick)
        first = next((c for r in self.data.ranks for f in r.frames for c in f.compiles), None)
        if keep is not None and summary is not None:  # a re-read while following: stay where the user is
            self._show(*keep)
        elif first is not None and summary is not None:
            self._show("graph", {"rank": first.rank, "compile_id": first.compile_id})
        elif summary is not None and (summary.events or self.view("results").runs):
            self._show("results", {})
        if self.open_at is not None and summary is not None:
            self.goto(self.open_at[0], **self.open_at[1])  # `[` goes back to where it opened

    # -- following a job still writing its trace ---------------------------------------------------
    def _follow_tick(self) -> None:
        if not self._follow_busy and self.ready:
            self._follow_busy = True
            self._follow_poll()

    @work(thread=True, group="follow", exit_on_error=False)
    def _follow_poll(self) -> None:
        """Off the event loop: read what the job appended; re-read the trace whole when it grew."""
        follow = self.follow
        try:
            reload = follow.poll()
            self.app.call_from_thread(self._show_live, follow.status())
            if not reload:
                return
            t0 = time.perf_counter()
            before = follow.tail.bytes_read
            try:
                session = Session.open(self.session.path)
            except FxlensError:  # a trace directory with no log yet
                return
            gc.disable()
            try:
                entries = list(load_ranks(session))
                summary = summarise(session)
            finally:
                gc.enable()
            follow.loaded(time.perf_counter() - t0, before)
            self.app.call_from_thread(self._reloaded, session, entries, summary)
        finally:
            self._follow_busy = False

    def _show_live(self, text: str) -> None:
        live = self.query_one("#live", Info)
        live.set(escape(text))
        live.add_class("shown")

    def _reloaded(self, session: Session, entries: list, summary) -> None:
        """The trace re-read: the tree and views on the new data, the user's place kept."""
        had = any(f.compiles for r in self.data.ranks for f in r.frames)
        keep = self.location() if self.ready and had else None  # else: open the first compile
        self.app.release_frozen()  # the previous read's objects can go
        self.session = session
        self.data = AppData(session)
        tree = self.query_one("#tree", CompileTree)
        tree.clear()
        for i, entry in enumerate(entries):
            self._add_rank(entry, i)
        if self.follow is not None and self.follow.ended and hasattr(self, "_follow_timer"):
            self._follow_timer.stop()
        self._loaded(summary, None, keep=keep)
        self._show_live(self.follow.status() if self.follow else "")

    # -- navigation ----------------------------------------------------------------------------
    def location(self) -> tuple[str, dict]:
        """Where the user is: (view, params)."""
        return self.current_view, self.view().location()

    def goto(self, view: str, record: bool = True, **params) -> None:
        """Show `view` at `params`, remembering where we were for `[` (back)."""
        if record:
            self.history.append(self.location())
            self.future.clear()
        self._show(view, params)

    def _show(self, view: str, params: dict) -> None:
        self.current_view = view
        self.query_one("#views", ContentSwitcher).current = f"view-{view}"
        tabs = self.query_one("#tabs", Tabs)
        if view in TABS_ON_DEMAND:
            tabs.show(view)
        if tabs.active != view:
            tabs.active = view
        self.view(view).show(**params)

    @on(Navigate)
    @guarded
    def _navigate(self, message: Navigate) -> None:
        message.stop()
        self.goto(message.view, **message.params)
        self.view().focus_main()

    @on(OpenRun)
    def _open_run(self, message: OpenRun) -> None:
        message.stop()
        try:
            session = Session.open(message.path)
        except FxlensError as e:
            self.notify(str(e), severity="error")
            return
        at = (message.view, message.params) if message.view else None
        self.app.push_screen(SessionScreen(session, parent=self, at=at))

    @on(Tabs.TabActivated, "#tabs")
    def _tab(self, event: Tabs.TabActivated) -> None:
        if event.tab.id and event.tab.id != self.current_view:
            self.action_view(event.tab.id)

    @on(Tree.NodeExpanded, "#tree")
    @guarded
    def _expanded(self, event: Tree.NodeExpanded) -> None:
        tree_mod.populate(event.node)

    @on(Tree.NodeSelected, "#tree")
    @guarded
    def _selected(self, event: Tree.NodeSelected) -> None:
        if not event.node.data or not self.ready:
            return
        kind, obj = event.node.data
        if kind == "run":
            self.post_message(OpenRun(obj["path"]))
        elif kind == "compile":
            has_graph = any(is_graph_kind(r.kind) for r in obj.records)
            self.goto(
                "graph" if has_graph else "artifact",
                rank=obj.rank,
                compile_id=obj.compile_id,
                kind=None if has_graph else (obj.records[-1].kind if obj.records else None),
            )
        elif kind == "artifact":
            entry, _label, rec = obj
            self.open_record(entry, rec)

    @guarded
    def open_record(self, entry, rec) -> None:
        """Open one artifact record of a compile in the view that understands it."""
        base = {"rank": entry.rank, "compile_id": entry.compile_id}
        view = "graph" if is_graph_kind(rec.kind) else _ARTIFACT_VIEW.get(rec.kind, "artifact")
        if view == "graph":
            self.goto("graph", **base, kind=rec.kind)
        elif view == "guards":
            self.goto("guards", **base)
        elif view in ("breaks", "recompiles"):
            self.goto(view, key=self.view(view).key_for(entry.compile_id))
        elif view == "metrics":
            self.goto("metrics", key=f"{entry.rank}|{entry.compile_id}")
        elif view == "output":
            self.goto("output", key=self.view("output").key_for(entry.rank, entry.compile_id))
        elif view == "kernels":
            same = [r for r in entry.records if r.kind == rec.kind]
            payloads = self.data.kernel_payloads(entry.rank, entry.compile_id)
            i = same.index(rec)
            name = payloads[i].get("name") if i < len(payloads) else None
            self.goto("kernels", **base, kernel=name)
        else:
            same = [r for r in entry.records if r.kind == rec.kind]
            self.goto("artifact", **base, kind=rec.kind, index=same.index(rec))

    # -- actions -------------------------------------------------------------------------------
    @guarded
    def action_view(self, name: str) -> None:
        """Switch to view `name`, keeping the compile id in focus where the view has one."""
        if name == self.current_view:
            return
        cur = self.view().location()
        params = dict(self.view(name).params)
        same = params.get("compile_id") == cur.get("compile_id") and params.get("rank") == cur.get("rank")
        if name in ("graph", "guards", "artifact") and "compile_id" in cur and not same:
            # follow the compile id in focus; a view already on it keeps its own state (sort, node)
            params = {"rank": cur.get("rank"), "compile_id": cur["compile_id"]}
            if name == "artifact":
                params["kind"] = "dynamo_output_graph"
        self.goto(name, **params)

    @guarded
    def action_view_key(self, key: str) -> None:
        """Run the current view's action for `key` (see keys.view_key_bindings)."""
        action = keys.view_action(self.current_view, key)
        if action is not None:
            getattr(self.view(), f"action_{action}")()

    @guarded
    def action_back(self) -> None:
        if self.history:
            self.future.append(self.location())
            self._show(*self.history.pop())

    @guarded
    def action_forward(self) -> None:
        if self.future:
            self.history.append(self.location())
            self._show(*self.future.pop())

    def action_close_session(self) -> None:
        """Back to the session this run was opened from (as it was left)."""
        if self.parent_screen is not None:
            self.app.pop_screen()
            self.app.release_frozen()

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        # escape only means something in a run opened from another session
        if action == "close_session":
            return self.parent_screen is not None
        return True

    def action_focus_tree(self) -> None:
        self.query_one("#tree", CompileTree).focus()

    def action_focus_view(self) -> None:
        self.view().focus_main()

    def action_diff(self) -> None:
        """Open the Diff page: this session against the one `fxlens tui A --diff B` named."""
        other = getattr(self.app, "diff_with", None)
        if other is None:
            self.notify("nothing to diff against: start with `fxlens tui A --diff B`", severity="warning")
            return
        from fxlens.tui.view_diff import DiffScreen

        self.app.push_screen(DiffScreen(self.session, other))

    def action_help(self) -> None:
        self.app.push_screen(TextScreen(help_text()))

    def action_show_skipped(self) -> None:
        self.app.push_screen(TextScreen(skipped_text(self.skipped)))

    def action_export(self) -> Path | None:
        """Write the current view as text to `fxlens-<view>[-<compile id>].txt` in the export dir."""
        view = self.view()
        text = view.export_text()
        cid = view.params.get("compile_id")
        stem = f"fxlens-{self.current_view}" + (f"-{re.sub(r'[^0-9A-Za-z]+', '_', cid)}" if cid else "")
        export_dir = self.app.export_dir
        path = export_dir / f"{stem}.txt"
        try:
            export_dir.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        except OSError as e:
            self.notify(f"export failed: {e}", severity="error")
            return None
        self.last_export = path
        self.notify(f"exported {self.current_view} view to {path}")
        return path

    def action_perfetto(self) -> None:
        """Write torch's Chromium events of every rank as one trace (`fxlens report --perfetto`)
        to `fxlens-perfetto.json` in the export dir, in a thread: a big job's logs take seconds."""
        self._write_perfetto(self.app.export_dir / "fxlens-perfetto.json")

    @work(thread=True, exclusive=True, group="perfetto", exit_on_error=False)
    def _write_perfetto(self, path: Path) -> None:
        from fxlens.report.perfetto import write_perfetto

        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            n = write_perfetto(self.session, str(path))
        except (OSError, FxlensError) as e:
            self.app.call_from_thread(self.notify, f"perfetto trace not written: {e}", severity="error")
            return
        self.last_export = path
        self.app.call_from_thread(
            self.notify,
            f"wrote {path} ({n} events, {len(self.session.logs)} rank(s)): open it in ui.perfetto.dev",
        )

    # -- search --------------------------------------------------------------------------------
    def action_search(self) -> None:
        tree = self.query_one("#tree", CompileTree)
        self._search_target = "tree" if tree.has_focus else "view"
        box = self.query_one("#search", SearchInput)
        box.placeholder = (
            f"search {'the compile-id tree' if self._search_target == 'tree' else self.current_view}…"
        )
        box.add_class("shown")
        box.value = ""
        box.focus()

    def close_search(self) -> None:
        """Hide the search line and give focus back."""
        self.query_one("#search", SearchInput).remove_class("shown")
        if self._search_target == "tree":
            self.action_focus_tree()
        else:
            self.view().focus_main()

    @on(Input.Changed, "#search")
    @guarded
    def _search_live(self, event: Input.Changed) -> None:
        if self._search_target == "view" and self.current_view not in ("guards", "artifact"):
            self.view().search(event.value)  # tables filter as you type

    @on(Input.Submitted, "#search")
    def _search_submit(self, event: Input.Submitted) -> None:
        self.run_search(event.value)
        self.close_search()

    @guarded
    def run_search(self, query: str) -> int:
        """Search the tree or the current view for `query`; returns the number of matches."""
        self.last_search = query
        if self._search_target == "tree":
            tree = self.query_one("#tree", CompileTree)
            node = tree_mod.search(tree, query, tree.cursor_node)
            if node is None:
                self.notify(f"no frame or compile id matches {query!r}", severity="warning")
                return 0
            # a node just added has no line number until the tree refreshes
            tree.call_after_refresh(tree.move_cursor, node)
            return 1
        n = self.view().search(query)
        if not n:
            self.notify(f"no match for {query!r} in {self.current_view}", severity="warning")
        return n

    def action_search_next(self) -> None:
        if not self.last_search:
            return
        if self._search_target == "tree":
            self.run_search(self.last_search)
        else:
            self.view().search_next()

    # -- command palette -----------------------------------------------------------------------
    def system_commands(self):
        """(title, help, callback) of this session's palette commands: views, export, compiles."""
        for v in VIEW_CLASSES:
            yield (
                f"View: {v.title}",
                f"switch to the {v.title.lower()} view",
                lambda n=v.view_id: self.action_view(n),
            )
        yield ("Export view as text", "write the current view to a .txt file", self.action_export)
        yield ("Keys", "list every key", self.action_help)
        if self.parent_screen is not None:
            yield ("Back to the parent session", "close this run", self.action_close_session)
        shown = 0
        for r in self.data.ranks:
            for f in r.frames:
                for c in f.compiles:
                    if shown >= 2000:
                        return
                    shown += 1
                    where = f"rank {c.rank} · " if c.rank is not None else ""
                    yield (
                        f"Compile {c.compile_id} {f.function}",
                        f"{where}{f.label} · {c.outcome}",
                        lambda c=c: self.goto("graph", rank=c.rank, compile_id=c.compile_id),
                    )
