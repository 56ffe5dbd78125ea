"""The compile-id tree: rank → frame → compile ids → artifacts, coloured by outcome, built lazily.

Frames get their compile ids, and compile ids their artifacts, only when first expanded, so a trace
with thousands of compiles adds a few hundred tree nodes up front.
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.widgets.tree import TreeNode

from fxlens.trace.reader import rank_from_name
from fxlens.tui.loader import (
    OUTCOME_LABEL,
    OUTCOME_STYLE,
    CompileEntry,
    FrameEntry,
    RankEntry,
    is_graph_kind,
)
from fxlens.tui.widgets import CompileTree


def _compile_label(c: CompileEntry) -> Text:
    label = Text.assemble(("● ", OUTCOME_STYLE[c.outcome]), (c.compile_id, "bold"))
    for tag in c.tags:
        label.append(f"  {OUTCOME_LABEL[tag]}", OUTCOME_STYLE[tag])
    return label


# cells of a frame's name the tree shows whole (the pane keeps ~23 at 80 columns); a longer name is
# cut in the middle, so names that share a long prefix still differ on screen (their ends, a
# resume's line), and the location after it is what a narrow pane gives up
FRAME_NAME_CELLS = 22


def clip_middle(text: str, cells: int) -> str:
    """TEXT in at most CELLS characters: its start, "…", and its (longer) end."""
    if len(text) <= cells:
        return text
    head = (cells - 1) * 2 // 5
    return text[:head] + "…" + text[len(text) - (cells - 1 - head) :]


def _frame_label(f: FrameEntry) -> Text:
    name, _, where = f.label.rpartition("  ")
    return Text.assemble(
        ("● ", OUTCOME_STYLE[f.outcome]),
        (clip_middle(name, FRAME_NAME_CELLS), ""),
        (f"  {where}", ""),
        (f"  ×{len(f.compiles)}", "dim"),
    )


def add_placeholder(tree: CompileTree, log: Path) -> TreeNode:
    """A node for a log still being read (replaced by `add_rank`): the UI is up before parsing."""
    rank = rank_from_name(log)
    who = f"rank {rank}" if rank is not None else log.name
    try:
        size = f"{log.stat().st_size / 2**20:.0f} MB"
    except OSError:
        size = "?"
    return tree.root.add(Text.assemble((who, "bold"), (f"  reading {size}…", "dim")), data=None)


def add_rank(tree: CompileTree, rank: RankEntry, expand: bool, node: TreeNode | None = None) -> TreeNode:
    """Add one rank with its frames (their compiles are added on expand), in `node` if given."""
    label = Text.assemble((rank.label, "bold"), (f"  {len(rank.frames)} frames", "dim"))
    if node is None:
        node = tree.root.add(label, data=("rank", rank))
    else:
        node.set_label(label)
        node.data = ("rank", rank)
    for f in rank.frames:
        node.add(_frame_label(f), data=("frame", f))
    if expand:
        node.expand()
    return node


def add_runs(tree: CompileTree, runs: list[dict]) -> TreeNode:
    """A "child runs" section: the runs of a bisect/minify session that kept a trace (enter opens one)."""
    node = tree.root.add(Text.assemble(("child runs", "bold"), (f"  {len(runs)}", "dim")), data=None)
    for r in runs:
        failed = r["exit_code"] not in (0, None)
        label = Text.assemble(
            ("● ", "red" if failed else "green"), (r["name"], ""), (f"  exit {r['exit_code']}", "dim")
        )
        node.add_leaf(label, data=("run", r))
    node.expand()
    return node


def populate(node: TreeNode) -> None:
    """Add the children of a frame or compile node the first time it is expanded."""
    if node.children or not node.data:
        return
    kind, obj = node.data
    if kind == "frame":
        for c in obj.compiles:
            node.add(_compile_label(c), data=("compile", c))
    elif kind == "compile":
        for label, rec in obj.artifacts():
            style = "cyan" if is_graph_kind(rec.kind) else "red" if "graph_break" in rec.kind else ""
            node.add_leaf(Text(label, style=style), data=("artifact", (obj, label, rec)))


def find_compile(tree: CompileTree, rank: int | None, compile_id: str) -> TreeNode | None:
    """Expand the path to a compile id and return its node (None if not in the tree)."""
    for rnode in tree.root.children:
        if not rnode.data:  # a log still being read, or unreadable
            continue
        _, r = rnode.data
        if rank is not None and r.model.rank != rank:
            continue
        for fnode in rnode.children:
            _, f = fnode.data
            if any(c.compile_id == compile_id for c in f.compiles):
                rnode.expand()
                populate(fnode)
                fnode.expand()
                return next((c for c in fnode.children if c.data[1].compile_id == compile_id), None)
    return None


def search(tree: CompileTree, query: str, after: TreeNode | None = None) -> TreeNode | None:
    """The next frame or compile (after `after`, wrapping) whose label or id contains `query`."""
    q = query.lower()
    hits: list[tuple[TreeNode, CompileEntry | None]] = []
    for rnode in tree.root.children:
        for fnode in rnode.children if rnode.data else ():
            _, f = fnode.data
            if q in f.label.lower():
                hits.append((fnode, None))
            hits += [
                (fnode, c)
                for c in f.compiles
                if q in c.compile_id or any(q in OUTCOME_LABEL[t] for t in c.tags)
            ]
    if not hits:
        return None
    start = 0
    if after is not None and after.data:
        cur = after.data[1] if after.data[0] == "compile" else None
        keys = [(n.id, c.compile_id if c else None) for n, c in hits]
        parent = after.parent if after.data[0] == "compile" else after
        me = (parent.id if parent else None, cur.compile_id if cur else None)
        if me in keys:
            start = keys.index(me) + 1
    fnode, c = hits[start % len(hits)]
    fnode.parent.expand()
    if c is None:
        return fnode
    populate(fnode)
    fnode.expand()
    return next((n for n in fnode.children if n.data[1] is c), None)
