"""The kernels view: every kernel fxlens's backend generated, its ops, bytes and Triton source."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical

from fxlens.trace.records import Kernel
from fxlens.tui import keys
from fxlens.tui.lazy_table import VimTable
from fxlens.tui.loader import is_graph_kind
from fxlens.tui.safe import escape
from fxlens.tui.viewbase import Navigate, View, guarded
from fxlens.tui.widgets import CodeView, Info

_COLS = ("rank", "compile id", "graph", "kernel", "ops", "bytes read", "bytes written")


def _kb(n) -> str:
    try:
        n = int(n)
    except (TypeError, ValueError):
        return "?"
    return f"{n / 1024:.1f} KiB" if n >= 4096 else f"{n} B"


class KernelsView(View):
    """A table of kernels, the selected one's ops/nodes/bytes, and its source.

    Params: rank, compile_id, kernel (name), node (the graph node we came from, for `o` back).
    """

    view_id = "kernels"
    title = "Kernels"
    BINDINGS = keys.bindings("kernels")
    # | key | action                              |
    # | o   | jump back to the kernel's graph node |

    DEFAULT_CSS = """
    KernelsView #kernels-table { height: 1fr; }
    KernelsView Horizontal { height: 2fr; }
    KernelsView #kernel-info { width: 40; padding: 0 1; border-right: solid $primary; }
    KernelsView #kernel-source { width: 1fr; }
    """

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[Kernel] = []  # the session's records; payloads are read on selection
        self.shown: list[Kernel] = []
        self.query_text = ""
        self._detailed: Kernel | None = None  # the kernel the detail panes show

    def compose(self) -> ComposeResult:
        yield VimTable(id="kernels-table")
        with Horizontal():
            with Vertical(id="kernel-info"):
                yield Info("", id="kernel-detail")
            yield CodeView(id="kernel-source")

    @guarded
    def set_data(self, data) -> None:
        super().set_data(data)
        self.rows = list(data.session.kernels)
        self._fill()

    def _fill(self) -> None:
        table = self.query_one("#kernels-table", VimTable)
        q = self.query_text.lower()
        self.shown = [
            k for k in self.rows if not q or q in f"{k.compile_id} {k.name} {' '.join(k.ops)}".lower()
        ]
        table.clear(columns=True)
        table.add_columns(*_COLS)
        table.priority = ("kernel", "compile id", "ops", "bytes read", "bytes written", "graph", "rank")
        table.add_rows(
            (
                str(i),
                (
                    "-" if k.rank is None else str(k.rank),
                    k.compile_id,
                    k.graph,
                    k.name,
                    str(len(k.ops)),
                    _kb(k.bytes_read),
                    _kb(k.bytes_written),
                ),
            )
            for i, k in enumerate(self.shown)
        )
        if not self.shown:
            self._detailed = None
            self.query_one("#kernel-detail", Info).set(
                "No fxlens kernels in this session: they appear when a script compiles with backend='fxlens'."
            )

    def draw(self) -> None:
        p = self.params
        table = self.query_one("#kernels-table", VimTable)
        for i, k in enumerate(self.shown):
            if (
                (p.get("kernel") is None or k.name == p.get("kernel"))
                and k.compile_id == p.get("compile_id", k.compile_id)
                and (p.get("rank") is None or k.rank == p.get("rank"))
            ):
                table.move_cursor(row=i, scroll=True)
                self._detail(i)
                return

    @on(VimTable.RowHighlighted, "#kernels-table")
    def _row(self, event: VimTable.RowHighlighted) -> None:
        if event.row_key.value is not None:
            self._detail(int(event.row_key.value))

    @guarded
    def _detail(self, i: int) -> None:
        if i >= len(self.shown):
            return
        kr = self.shown[i]
        if kr is self._detailed:  # draw() shows it, then the cursor's RowHighlighted asks again
            return
        self._detailed = kr
        rank, cid = kr.rank, kr.compile_id
        k = {
            "name": kr.name,
            "graph": kr.graph,
            "ops": kr.ops,
            "bytes_read": kr.bytes_read,
            "bytes_written": kr.bytes_written,
            **self.data.kernel_payload(kr),
        }
        self.params.update(rank=rank, compile_id=cid, kernel=kr.name)
        if self.params.get("rank") is None:
            self.params.pop("rank")
        ops = "\n".join(f"  {escape(str(o))}" for o in k.get("ops") or ()) or "  -"
        nodes = escape(", ".join(map(str, k.get("nodes") or ()))) or "-"
        self.query_one("#kernel-detail", Info).set(
            f"[b]{escape(str(k.get('name', '?')))}[/b]\ncompile {cid} · {k.get('graph', '')}\n\n"
            f"[b]ops fused[/b]\n{ops}\n\n[b]graph nodes[/b]\n  {nodes}\n\n"
            f"[b]bytes[/b]\n  read    {_kb(k.get('bytes_read'))}\n  written {_kb(k.get('bytes_written'))}\n"
            + "".join(f"  {escape(str(x))} {escape(str(k[x]))}\n" for x in ("numel", "rnumel") if x in k)
            + f"\n{escape(str(k.get('source_path') or ''))}\n\n[dim]o: back to the graph node[/dim]"
        )
        self.query_one("#kernel-source", CodeView).set_code(str(k.get("source") or "(no source logged)"))

    @guarded
    def action_jump_node(self) -> None:
        table = self.query_one("#kernels-table", VimTable)
        if not self.shown or self.data is None:
            return
        kr = self.shown[min(table.cursor_row, len(self.shown) - 1)]
        rank, cid, k = kr.rank, kr.compile_id, self.data.kernel_payload(kr)
        nodes = list(k.get("nodes") or ())
        node = self.params.get("node") if self.params.get("node") in nodes else (nodes[0] if nodes else None)
        entry = self.data.compile(rank, cid)
        kinds = [r.kind for r in entry.records if is_graph_kind(r.kind)] if entry else []
        # the kernel's nodes are named in the graph the backend lowered: prefer the backend's own
        kind = next((x for x in kinds if x.startswith("artifact:fxlens_") and kr.graph in x), None)
        kind = kind or next((x for x in kinds if x.startswith("artifact:fxlens_")), None)
        kind = kind or next((x for x in kinds if x.startswith("aot_")), None) or (kinds[0] if kinds else None)
        self.post_message(Navigate("graph", rank=rank, compile_id=cid, kind=kind, node=node))

    @guarded
    def search(self, query: str) -> int:
        self.query_text = query
        self._fill()
        return len(self.shown)

    def export_text(self) -> str:
        detail = self.query_one("#kernel-detail", Info).plain
        src = self.query_one("#kernel-source", CodeView).text()
        return self.query_one("#kernels-table", VimTable).export_text() + f"\n\n{detail}\n\n{src}\n"
