"""The stack trie: every compile under the user stack that entered it (tlparse's "stack trie").

Each compile's `dynamo_start` record carries the stack that called into Dynamo. Merged into a trie
of the user's frames (torch's own frames are left out: they are the same for every compile), it
shows at a glance which call sites compile, how often, and with what outcome; the same compile on
many ranks is one leaf entry with its ranks.
"""

from __future__ import annotations

from fxlens.report.document import Mark, Section, Tree
from fxlens.trace.userfiles import is_user_file
from fxlens.trace.userframes import short_path

TEXT_LINES = 14


def _outcomes(model) -> dict[str, str]:
    """compile id -> ok / graph break / recompile / failed / restart, for one rank."""
    out = {}
    breaks = {b.compile_id for b in model.graph_breaks}
    recompiles = {r.compile_id for r in model.recompiles}
    for m in model.metrics:
        out[m.compile_id] = (
            "failed"
            if m.fail_type
            else "recompile"
            if m.compile_id in recompiles
            else "graph break"
            if m.compile_id in breaks
            else "ok"
        )
    return out


def stack_trie(session) -> list[dict]:
    """The trie's roots: `{file, line, function, code, children, compiles: [{compile_id, outcome, ranks}]}`."""
    roots: list[dict] = []
    for r in session.ranks:
        outcome = _outcomes(r)
        for cid, stack in r.entry_stacks.items():
            level = roots
            node = None
            for f in (f for f in stack if is_user_file(f.file)):
                node = next(
                    (
                        n
                        for n in level
                        if (n["file"], n["line"], n["function"]) == (f.file, f.line, f.function)
                    ),
                    None,
                )
                if node is None:
                    node = {
                        "file": f.file,
                        "line": f.line,
                        "function": f.function,
                        "code": f.code,
                        "children": [],
                        "compiles": [],
                    }
                    level.append(node)
                level = node["children"]
            if node is None:
                continue  # no user frame (a compile entered from torch itself)
            key = (cid, outcome.get(cid, "ok"))
            entry = next((c for c in node["compiles"] if (c["compile_id"], c["outcome"]) == key), None)
            if entry is None:
                entry = {"compile_id": cid, "outcome": key[1], "ranks": []}
                node["compiles"].append(entry)
            entry["ranks"].append(r.rank)
    return roots


def trie_tree(report: dict, limit: int, shorten=str) -> Tree | None:
    """The trie as a Tree block, at most LIMIT rows (then a row saying how many more), each frame
    with its compiles and their outcome (and ranks for a job); SHORTEN applies to every text."""
    from fxlens.report.ranks import rank_ranges

    roots = report.get("stack_trie") or []
    if not roots:
        return None
    ranked = len(report.get("ranks") or []) > 1
    rows: list = []

    def walk(nodes: list[dict], depth: int) -> None:
        for n in nodes:
            marks = [
                Mark(
                    shorten(c["compile_id"]),
                    c["outcome"],
                    f" ({'rank' if len(c['ranks']) == 1 else 'ranks'} {rank_ranges(c['ranks'], limit=4)})"
                    if ranked
                    else "",
                )
                for c in n["compiles"]
            ]
            rows.append((depth, shorten(f"{short_path(n['file'])}:{n['line']} {n['function']}"), marks))
            walk(n["children"], depth + 1)

    walk(roots, 0)
    more = f"... {len(rows) - limit} more line(s) (see --json stack_trie)" if len(rows) > limit else ""
    return Tree(rows[:limit], more)


def stack_trie_section(report: dict, limit: int = TEXT_LINES, shorten=str) -> list[Section]:
    """The trie (LIMIT rows) under its title: the terminal indents it, Markdown shows it as a code
    block, HTML colours each compile by its outcome; SHORTEN applies to every text."""
    tree = trie_tree(report, limit, shorten)
    if tree is None:
        return []
    return [Section("Stack trie", [tree], gloss="the user frames that entered each compile")]
