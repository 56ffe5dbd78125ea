"""tlparse's stack trie and inductor's output code, as TUI views (the report's `stack_trie` and
`output_code`, fxlens.report.stacktrie and fxlens.report.outputcode).

The stack trie is one row per user frame, indented under its caller, with the compiles it entered
and their outcome (coloured as the compile-id tree colours them); `o` opens the selected frame's
first compile in the graph view. The output code is one row per generated kernel: the compile, the
post-grad nodes it fuses and the user line they came from (provenance, when the trace has it); the
detail holds the pre-grad nodes, the kernel's stack and the whole generated file.
"""

from __future__ import annotations

from rich.text import Text

from fxlens.report.outputcode import kernel_source
from fxlens.report.ranks import rank_ranges
from fxlens.trace.sanitize import for_terminal
from fxlens.trace.userframes import short_path
from fxlens.tui import keys
from fxlens.tui.loader import OUTCOME_STYLE
from fxlens.tui.safe import escape
from fxlens.tui.view_list import ListView
from fxlens.tui.viewbase import Navigate, guarded

# lines of a generated file shown in the detail (the artifact view shows the whole file)
CODE_LINES = 400
# the trie's outcome words -> the tree's outcome styles
_STYLE = {
    "failed": "failed",
    "graph break": "break",
    "recompile": "recompile",
    "restart": "break",
    "ok": "ok",
}


def _worst(outcomes: list[str]) -> str:
    order = ("failed", "graph break", "restart", "recompile", "ok")
    return min(outcomes, key=lambda o: order.index(o) if o in order else 0) if outcomes else ""


def _ranks(ranks: list) -> str:
    return "" if ranks == [None] else rank_ranges(ranks, limit=4)


class StackTrieView(ListView):
    """The user frames that entered each compile, as a tree of rows; each compile's outcome.

    Params: key (the row's path in the trie, "0.1.0"), filter.
    """

    view_id = "trie"
    title = "Stack trie"
    BINDINGS = keys.bindings("trie")
    # | key | action                                   |
    # | o   | open the frame's first compile (graph)   |
    columns = ("frame", "compiles", "outcome", "ranks")
    priority = ("frame", "outcome", "compiles", "ranks")
    empty = "No stack trie: the trace logged no dynamo_start stack with a user frame."

    def _trie_nodes(self) -> dict[str, dict]:
        """Row key -> trie node, in depth-first order."""
        out: dict[str, dict] = {}

        def walk(nodes: list[dict], path: str) -> None:
            for i, n in enumerate(nodes):
                key = f"{path}.{i}" if path else str(i)
                out[key] = n
                walk(n["children"], key)

        walk(self.data.summary.stack_trie if self.data and self.data.summary else [], "")
        return out

    def rows(self):
        out = []
        self._trie_rows = self._trie_nodes()
        for key, n in self._trie_rows.items():
            depth = key.count(".")
            # the function first: on a narrow screen the cut falls on the file name, not on it
            frame = f"{'  ' * depth}{n['function']}  {n['file'].rsplit('/', 1)[-1]}:{n['line']}"
            comp = ", ".join(c["compile_id"] for c in n["compiles"])
            worst = _worst([c["outcome"] for c in n["compiles"]])
            ranks = sorted({r for c in n["compiles"] for r in c["ranks"] if r is not None})
            outcome = Text(worst, style=OUTCOME_STYLE[_STYLE.get(worst, "ok")]) if worst else ""
            cells = (frame, comp, outcome, rank_ranges(ranks, limit=4))
            out.append((key, cells, f"{frame} {comp} {worst} {n['code']}"))
        return out

    def detail(self, key: str) -> str:
        n = self._trie_rows.get(key)
        if n is None:
            return ""
        lines = [
            f"[b]{escape(n['function'])}[/b] · {escape(short_path(n['file']))}:{n['line']}",
            f"  {escape(n['code'].strip())}" if n["code"] else "",
            "",
        ]
        if n["compiles"]:
            lines.append("[b]compiles entered here[/b] (o: open the first in the graph view)")
            for c in n["compiles"]:
                style = OUTCOME_STYLE[_STYLE.get(c["outcome"], "ok")]
                ranks = _ranks(c["ranks"])
                lines.append(
                    f"  {escape(c['compile_id'])}  [{style}]{escape(c['outcome'])}[/{style}]"
                    + (f"  on {'rank' if len(c['ranks']) == 1 else 'ranks'} {escape(ranks)}" if ranks else "")
                )
        else:
            lines.append("no compile entered here: its callees did (the rows below it)")
        return "\n".join(lines)

    @guarded
    def action_open_compile(self) -> None:
        """Open the selected frame's first compile (on its first rank) in the graph view."""
        if not self.shown:
            return
        n = self._trie_rows.get(self.shown[min(self.table.cursor_row, len(self.shown) - 1)][0])
        if n and n["compiles"]:
            c = n["compiles"][0]
            self.post_message(Navigate("graph", rank=c["ranks"][0], compile_id=c["compile_id"]))


class OutputCodeView(ListView):
    """Inductor's generated code: one row per kernel with the nodes it fuses and the user line they
    came from; the detail has the kernel's provenance in full and the whole generated file.

    Params: key ("<entry>|<kernel>"), filter.
    """

    view_id = "output"
    title = "Output code"
    columns = ("compile id", "kernel", "ranks", "post-grad nodes", "user line", "file")
    priority = ("kernel", "compile id", "ranks", "post-grad nodes", "user line", "file")
    empty = "No inductor output code in this trace (inductor did not compile, or hit its cache)."

    def _entries(self) -> list[dict]:
        return self.data.summary.output_code if self.data and self.data.summary else []

    def rows(self):
        out = []
        for i, e in enumerate(self._entries()):
            file = e["file"].rsplit("/", 1)[-1]
            for j, k in enumerate(e["kernels"] or [None]):
                name = k["name"] if k else "(no kernel)"
                post = ", ".join(k["post_grad_nodes"]) if k else ""
                src = kernel_source(k["stack"]) if k else ""
                cells = (e["compile_id"], name, _ranks(e["ranks"]), post or "-", src or "-", file)
                out.append(
                    (f"{i}|{j}", cells, f"{e['compile_id']} {e['function']} {name} {post} {src} {file}")
                )
        return out

    def detail(self, key: str) -> str:
        i, j = (int(x) for x in key.split("|"))
        e = self._entries()[i]
        k = e["kernels"][j] if j < len(e["kernels"]) else None
        lines = [
            f"[b]compile {escape(e['compile_id'])}[/b] · {escape(e['function'])} · {escape(e['file'])}"
            f" · {e['lines']} lines · {len(e['kernels'])} kernel(s)"
            + (f" · ranks {escape(_ranks(e['ranks']))}" if _ranks(e["ranks"]) else ""),
        ]
        if not e["provenance"]:
            lines.append("[yellow]no provenance in this trace: run with INDUCTOR_PROVENANCE=1[/yellow]")
        if k:
            lines += ["", f"[b]{escape(k['name'])}[/b] ({escape(k['kind'])})"]
            lines.append(f"  post-grad nodes: {escape(', '.join(k['post_grad_nodes']) or '-')}")
            lines.append(f"  pre-grad nodes:  {escape(', '.join(k['pre_grad_nodes']) or '-')}")
            if k["stack"]:
                lines += ["  user stack:", *(f"    {escape(ln)}" for s in k["stack"] for ln in s.split("\n"))]
        code = self.data.session.artifact(e["compile_id"], "inductor_output_code", e["ranks"][0])
        if code:
            text = code.split("\n")
            lines += [
                "",
                f"[b]generated code[/b] ({len(text)} lines)",
                escape(for_terminal("\n".join(text[:CODE_LINES]))),
            ]
            if len(text) > CODE_LINES:
                lines.append(
                    f"[dim]… {len(text) - CODE_LINES} more lines (the artifact view, 9, has them all)[/dim]"
                )
        return "\n".join(lines)

    def key_for(self, rank: int | None, compile_id: str) -> str | None:
        """The first row of `compile_id`'s output code on `rank`."""
        for i, e in enumerate(self._entries()):
            if e["compile_id"] == compile_id and rank in e["ranks"]:
                return f"{i}|0"
        return None
