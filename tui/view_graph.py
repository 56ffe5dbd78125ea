"""The graph view: a compile's printed FX/ATen graph beside its sortable, filterable node table."""

from __future__ import annotations

import re

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.containers import Container

from fxlens.graph_code import COLUMNS, Node, filter_nodes, parse_graph, sort_nodes
from fxlens.tui import keys
from fxlens.tui.loader import ARTIFACT_LABELS, is_graph_kind
from fxlens.tui.viewbase import Navigate, View, guarded
from fxlens.tui.widgets import CodeView, Info, VimTable
from fxlens.userframes import short_path

#: graphs whose printed code is bigger than this are read and parsed in a worker thread
PARSE_IN_WORKER_BYTES = 256 * 1024
_FILE_IN_COMMENT = re.compile(r"^(\s*# File: )(.+?):(?=\d+ in )", re.M)


def _short_files(code: str) -> str:
    """`# File: /abs/path/model.py:12` comments with the path relative to the cwd (same lines)."""
    return _FILE_IN_COMMENT.sub(lambda m: m[1] + short_path(m[2]) + ":", code)


class GraphView(View):
    """Graph code (highlighted, the selected node marked) and the node table.

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
        self._token = 0

    def compose(self) -> ComposeResult:
        yield Info("Select a compile id in the tree (enter) to see its graph.", id="graph-title")
        # code beside the table on wide terminals, above it on narrow ones (see on_resize)
        with Container(id="graph-panes"):
            yield CodeView(id="graph-code")
            yield VimTable(id="graph-nodes")

    def on_resize(self, event: events.Resize) -> None:
        self.query_one("#graph-panes").set_class(event.size.width >= 130, "wide")

    def draw(self) -> None:
        p = self.params
        title = self.query_one("#graph-title", Info)
        code_view = self.query_one("#graph-code", CodeView)
        table = self.query_one("#graph-nodes", VimTable)
        entry = self.data.compile(p.get("rank"), p["compile_id"]) if "compile_id" in p else None
        if entry is None:
            code_view.set_code("")
            table.clear(columns=True)
            self.nodes = self.shown = []
            return
        self.kinds = list(dict.fromkeys(r.kind for r in entry.records if is_graph_kind(r.kind)))
        kind = p.get("kind") if p.get("kind") in self.kinds else (self.kinds[0] if self.kinds else None)
        if kind is None:
            title.set(f"compile {p['compile_id']}: no graph was logged (see the tree for its artifacts)")
            code_view.set_code("")
            table.clear(columns=True)
            self.nodes = self.shown = []
            return
        self.params["kind"] = kind
        rec = next(r for r in reversed(entry.records) if r.kind == kind)
        self._token += 1
        where = f"rank {entry.rank} · " if entry.rank is not None else ""
        head = f"{where}compile {entry.compile_id}"
        label = ARTIFACT_LABELS.get(kind, kind.removeprefix("artifact:"))
        if rec.payload_span and rec.payload_span[1] - rec.payload_span[0] > PARSE_IN_WORKER_BYTES:
            # a big graph is read and parsed off the event loop; the pane says so meanwhile
            title.set(f"[b]{head}[/b] · {label} · reading…")
            code_view.set_code("")
            table.clear(columns=True)
            self.nodes = self.shown = []
            self._parse_in_worker(rec, head, label, self._token)
        else:
            code = rec.payload()
            self._show_graph(self._token, head, label, code, parse_graph(code))

    @work(thread=True, exclusive=True, group="graph-parse")
    def _parse_in_worker(self, rec, head: str, label: str, token: int) -> None:
        code = rec.payload()
        nodes = parse_graph(code)
        self.app.call_from_thread(self._show_graph, token, head, label, code, nodes)

    @guarded
    def _show_graph(self, token: int, head: str, label: str, code: str, nodes: list[Node]) -> None:
        if token != self._token:  # the user moved on while this graph was parsed
            return
        self.nodes = nodes
        others = f"  (a: {len(self.kinds)} graphs)" if len(self.kinds) > 1 else ""
        self.query_one("#graph-title", Info).set(f"[b]{head}[/b] · {label} · {len(nodes)} nodes{others}")
        self.query_one("#graph-code", CodeView).set_code(_short_files(code), "python")
        self._fill_table()

    @guarded
    def _fill_table(self) -> None:
        p = self.params
        table = self.query_one("#graph-nodes", VimTable)
        nodes = filter_nodes(self.nodes, p.get("filter", ""))
        if p.get("sort"):
            nodes = sort_nodes(nodes, p["sort"], bool(p.get("reverse")))
        self.shown = nodes
        table.clear(columns=True)
        for c in COLUMNS:
            arrow = (" ▼" if p.get("reverse") else " ▲") if p.get("sort") == c else ""
            table.add_column(c + arrow, key=c)
        for n in nodes:
            table.add_row(*(Text(n.cell(c)) for c in COLUMNS), key=n.name)
        want = p.get("node")
        names = [n.name for n in nodes]
        if want in names:
            table.move_cursor(row=names.index(want), scroll=True)
        self._mark(nodes[table.cursor_row] if nodes and table.cursor_row < len(nodes) else None)

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
        kernels = self.data.kernel_payloads(rank, cid)
        # kernels name the nodes of the graph the backend lowered; a node of another graph (the
        # Dynamo graph) reaches them through the user line both graphs print for it
        names = [node.name] + self._lowered_nodes_at(node.source)
        for name in names:
            for k in kernels:
                if name in (k.get("nodes") or ()):
                    self.post_message(
                        Navigate("kernels", rank=rank, compile_id=cid, kernel=k.get("name"), node=name)
                    )
                    return
        self.app.notify(f"no fxlens kernel computes node {node.name} (compile {cid})", severity="warning")

    def _lowered_nodes_at(self, source: str) -> list[str]:
        """Nodes of this compile's fxlens ATen graphs that come from the same user line."""
        entry = self.data.compile(self.params.get("rank"), self.params.get("compile_id", ""))
        if not source or entry is None:
            return []
        out: list[str] = []
        for rec in entry.records:
            if (
                rec.kind.startswith("artifact:fxlens_")
                and is_graph_kind(rec.kind)
                and rec.kind != self.params.get("kind")
            ):
                out += [
                    n.name
                    for n in parse_graph(rec.payload())
                    if n.source == source and n.op == "call_function"
                ]
        return out

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
