"""The graph view: a compile's printed FX/ATen graph beside its sortable, filterable node table."""

from __future__ import annotations

import re
from collections import OrderedDict

from textual import events, on, work
from textual.app import ComposeResult
from textual.containers import Container

from fxlens.trace.graph_code import COLUMNS, Node, filter_nodes, parse_graph, sort_nodes
from fxlens.trace.sanitize import clean, for_terminal
from fxlens.trace.userframes import short_path
from fxlens.tui import keys
from fxlens.tui.lazy_table import VimTable
from fxlens.tui.loader import artifact_label, is_graph_kind
from fxlens.tui.safe import escape
from fxlens.tui.viewbase import Navigate, View, guarded
from fxlens.tui.widgets import CodeView, Info

#: parsed graphs kept per view, so going back to a graph shows it at once
CACHE_GRAPHS = 32
_FILE_IN_COMMENT = re.compile(r"^(\s*# File: )(.+?):(?=\d+ in )", re.M)


def _short_files(code: str) -> str:
    """`# File: /abs/path/model.py:12` comments with the path relative to the cwd (same lines)."""
    return _FILE_IN_COMMENT.sub(lambda m: m[1] + short_path(m[2]) + ":", code)


def _key(rec) -> tuple:
    """What identifies a graph record across draws (the Record objects are shared, not copied)."""
    return (str(rec.path), rec.line_no, rec.kind)


def read_graph(rec) -> tuple[str, list[Node]]:
    """(code as shown, nodes) of a graph record: reads the payload from disk and parses it."""
    code = rec.payload()
    return for_terminal(_short_files(code)), clean(parse_graph(code))


class GraphView(View):
    """Graph code (highlighted, the selected node marked) and the node table.

    Every graph is read and parsed in a worker thread while the pane says "reading…"; parsed
    graphs are cached, and a redraw of the graph on screen only re-sorts, re-filters or moves the
    cursor, whichever the params changed.

    Params: rank, compile_id, kind (record kind of the graph), node (selected node name),
    sort (column), reverse, filter.
    """

    view_id = "graph"
    title = "Graph"
    BINDINGS = keys.bindings("graph")
    # | key | action                                      |
    # | o   | jump from the selected node to its kernel   |
    # | s/S | sort by the next column / reverse the sort  |
    # | a   | next graph of this compile (Dynamo, ATen)   |

    DEFAULT_CSS = """
    GraphView #graph-title { height: auto; padding: 0 1; background: $boost; }
    GraphView #graph-panes { height: 1fr; layout: vertical; }
    GraphView #graph-panes.wide { layout: horizontal; }
    GraphView #graph-code { width: 1fr; height: 1fr; }
    GraphView #graph-nodes { width: 1fr; height: 1fr; }
    """

    def __init__(self) -> None:
        super().__init__()
        self.nodes: list[Node] = []
        self.shown: list[Node] = []
        self.kinds: list[str] = []
        self.loading = False  # a graph is being read in the worker; the pane shows a placeholder
        self._token = 0
        self._parsed: OrderedDict[tuple, tuple[str, list[Node]]] = OrderedDict()
        self._on_screen: tuple | None = None  # _key of the graph shown
        self._table_state: tuple | None = None  # (filter, sort, reverse) the table was filled with

    def compose(self) -> ComposeResult:
        yield Info("Select a compile id in the tree (enter) to see its graph.", id="graph-title")
        # code beside the table on wide terminals, above it on narrow ones (see on_resize)
        with Container(id="graph-panes"):
            yield CodeView(id="graph-code")
            yield VimTable(id="graph-nodes")

    def on_resize(self, event: events.Resize) -> None:
        self.query_one("#graph-panes").set_class(event.size.width >= 130, "wide")

    def _clear(self, title: str | None = None) -> None:
        if title is not None:
            self.query_one("#graph-title", Info).set(title)
        self.query_one("#graph-code", CodeView).set_code("")
        self.query_one("#graph-nodes", VimTable).clear(columns=True)
        self.nodes, self.shown = [], []
        self._on_screen = self._table_state = None

    def draw(self) -> None:
        p = self.params
        entry = self.data.compile(p.get("rank"), p["compile_id"]) if "compile_id" in p else None
        if entry is None:
            self._token += 1
            self._clear()
            return
        self.kinds = list(dict.fromkeys(r.kind for r in entry.records if is_graph_kind(r.kind)))
        kind = p.get("kind") if p.get("kind") in self.kinds else (self.kinds[0] if self.kinds else None)
        if kind is None:
            self._token += 1
            self._clear(f"compile {p['compile_id']}: no graph was logged (see the tree for its artifacts)")
            return
        self.params["kind"] = kind
        rec = next(r for r in reversed(entry.records) if r.kind == kind)
        key = _key(rec)
        if key == self._on_screen:  # the same graph: only sort, filter or the node may change
            self._fill_table()
            return
        self._token += 1
        where = f"rank {entry.rank} · " if entry.rank is not None else ""
        head = f"{where}compile {entry.compile_id}"
        label = artifact_label(kind) or kind.removeprefix("artifact:")
        if key in self._parsed:
            self._parsed.move_to_end(key)
            self._show_graph(self._token, key, head, label, *self._parsed[key])
            return
        # read and parse off the event loop; the pane says so meanwhile
        self.loading = True
        self._clear(f"[b]{head}[/b] · {label} · reading…")
        self._parse_in_worker(rec, key, head, label, self._token)

    @work(thread=True, exclusive=True, group="graph-parse", exit_on_error=False)
    def _parse_in_worker(self, rec, key: tuple, head: str, label: str, token: int) -> None:
        try:
            code, nodes = read_graph(rec)
        except Exception as e:  # noqa: BLE001 - a graph we cannot read is a message, not a crash
            self.app.call_from_thread(self._failed, token, head, label, f"{type(e).__name__}: {e}")
            return
        self.app.call_from_thread(self._show_graph, token, key, head, label, code, nodes)

    def _failed(self, token: int, head: str, label: str, error: str) -> None:
        if token == self._token:
            self.loading = False
            self.query_one("#graph-title", Info).set(
                f"[b]{head}[/b] · {label} · [red]could not read this graph: {escape(error)}[/red]"
            )

    @guarded
    def _show_graph(
        self, token: int, key: tuple, head: str, label: str, code: str, nodes: list[Node]
    ) -> None:
        if token != self._token:  # the user moved on while this graph was parsed
            return
        self._parsed[key] = (code, nodes)
        while len(self._parsed) > CACHE_GRAPHS:
            self._parsed.popitem(last=False)
        self.loading = False
        self.nodes = nodes
        self._on_screen = key
        self._table_state = None
        others = f"  (a: {len(self.kinds)} graphs)" if len(self.kinds) > 1 else ""
        self.query_one("#graph-title", Info).set(f"[b]{head}[/b] · {label} · {len(nodes)} nodes{others}")
        self.query_one("#graph-code", CodeView).set_code(code, "python")
        self._fill_table()

    @guarded
    def _fill_table(self) -> None:
        """Fill the node table for the params; only the cursor moves when sort and filter are as drawn."""
        p = self.params
        table = self.query_one("#graph-nodes", VimTable)
        state = (p.get("filter", ""), p.get("sort"), bool(p.get("reverse")))
        if state != self._table_state:
            nodes = filter_nodes(self.nodes, state[0])
            if state[1]:
                nodes = sort_nodes(nodes, state[1], state[2])
            self.shown = nodes
            self._table_state = state
            table.clear(columns=True)
            for c in COLUMNS:
                arrow = (" ▼" if state[2] else " ▲") if state[1] == c else ""
                table.add_column(c + arrow, key=c)
            table.priority = ("target", "name", "shape", "op", "dtype")  # what a node is, then its value
            table.add_rows((n.name, tuple(n.cell(c) for c in COLUMNS)) for n in nodes)
        names = [n.name for n in self.shown]
        want = p.get("node")
        if want in names and names.index(want) != table.cursor_row:
            table.move_cursor(row=names.index(want), scroll=True)
        shown = self.shown
        self._mark(shown[table.cursor_row] if shown and table.cursor_row < len(shown) else None)

    def _mark(self, node: Node | None) -> None:
        code_view = self.query_one("#graph-code", CodeView)
        if node is None:
            code_view.set_marks({})
            return
        code_view.set_marks({node.line_no: "cursor"})
        code_view.goto_line(node.line_no)

    @on(VimTable.RowHighlighted, "#graph-nodes")
    def _row(self, event: VimTable.RowHighlighted) -> None:
        if event.row_key.value is None:
            return
        node = next((n for n in self.shown if n.name == event.row_key.value), None)
        if node is not None:
            self.params["node"] = node.name
            self._mark(node)

    @on(VimTable.HeaderSelected, "#graph-nodes")
    def _header(self, event: VimTable.HeaderSelected) -> None:
        col = str(event.column_key.value)
        if self.params.get("sort") == col:
            self.params["reverse"] = not self.params.get("reverse")
        else:
            self.params["sort"], self.params["reverse"] = col, False
        self._fill_table()

    def selected(self) -> Node | None:
        """The node under the table cursor."""
        table = self.query_one("#graph-nodes", VimTable)
        if not self.shown or table.cursor_row >= len(self.shown):
            return None
        return self.shown[table.cursor_row]

    def focus_main(self) -> None:
        self.query_one("#graph-nodes", VimTable).focus()

    def action_sort_next(self) -> None:
        cur = self.params.get("sort")
        i = COLUMNS.index(cur) + 1 if cur in COLUMNS else 0
        self.params["sort"], self.params["reverse"] = COLUMNS[i % len(COLUMNS)], False
        self._fill_table()
        self.app.notify(f"sorted by {self.params['sort']}", timeout=1.5)

    def action_sort_reverse(self) -> None:
        self.params["sort"] = self.params.get("sort") or COLUMNS[0]
        self.params["reverse"] = not self.params.get("reverse")
        self._fill_table()

    def action_next_graph(self) -> None:
        if len(self.kinds) < 2:
            self.app.notify("this compile logged one graph only", timeout=2)
            return
        i = (self.kinds.index(self.params.get("kind")) + 1) % len(self.kinds)
        self.post_message(Navigate("graph", **{**self.params, "kind": self.kinds[i], "node": None}))

    @guarded
    def action_jump_kernel(self) -> None:
        node = self.selected()
        if node is None or self.data is None:
            return
        rank, cid = self.params.get("rank"), self.params.get("compile_id")
        entry = self.data.compile(rank, cid)
        # kernels name the nodes of the graph the backend lowered; a node of another graph (the
        # Dynamo graph) reaches them through the user line both graphs print for it
        lowered = [
            rec
            for rec in (entry.records if entry and node.source else ())
            if rec.kind.startswith("artifact:fxlens_")
            and is_graph_kind(rec.kind)
            and rec.kind != self.params.get("kind")
        ]
        self._find_kernel(node, rank, cid, lowered)

    @work(thread=True, exclusive=True, group="graph-jump", exit_on_error=False)
    def _find_kernel(self, node: Node, rank, cid: str, lowered: list) -> None:
        """Find the kernel of `node` off the event loop (it may parse the lowered graphs)."""
        try:
            kernels = self.data.kernel_payloads(rank, cid)
            names = [node.name]
            for rec in lowered:
                parsed = self._parsed.get(_key(rec)) or read_graph(rec)
                names += [n.name for n in parsed[1] if n.source == node.source and n.op == "call_function"]
        except Exception as e:  # noqa: BLE001
            self.app.call_from_thread(self.app.notify, f"graph: {type(e).__name__}: {e}", severity="error")
            return
        for name in names:
            for k in kernels:
                if name in (k.get("nodes") or ()):
                    target = Navigate("kernels", rank=rank, compile_id=cid, kernel=k.get("name"), node=name)
                    self.app.call_from_thread(self.post_message, target)
                    return
        self.app.call_from_thread(
            self.app.notify, f"no fxlens kernel computes node {node.name} (compile {cid})", severity="warning"
        )

    @guarded
    def search(self, query: str) -> int:
        self.params["filter"] = query
        self._fill_table()
        return len(self.shown)

    def export_text(self) -> str:
        title = self.query_one("#graph-title", Info).plain
        code = self.query_one("#graph-code", CodeView).text()
        table = self.query_one("#graph-nodes", VimTable).export_text()
        return f"{title}\n\n{code}\n\nNodes:\n{table}\n"
