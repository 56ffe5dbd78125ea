"""The stack trie: every compile under the user stack that entered it (tlparse's "stack trie").

Each compile's `dynamo_start` record carries the stack that called into Dynamo. Merged into a trie
of the user's frames (torch's own frames are left out: they are the same for every compile), it
shows at a glance which call sites compile, how often, and with what outcome; the same compile on
many ranks is one leaf entry with its ranks.
"""

from __future__ import annotations

from fxlens.trace.userframes import is_user_file, short_path

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


def stack_trie_lines(report: dict, limit: int = TEXT_LINES) -> list[str]:
    """Text: the trie indented, each frame's compiles with their outcome (and ranks for a job)."""
    from fxlens.report.ranks import rank_ranges

    roots = report.get("stack_trie") or []
    if not roots:
        return []
    ranked = len(report.get("ranks") or []) > 1
    out = ["Stack trie (the user frames that entered each compile):"]

    def walk(nodes: list[dict], depth: int) -> None:
        for n in nodes:
            comp = ", ".join(
                f"{c['compile_id']}{'' if c['outcome'] == 'ok' else ' ' + c['outcome']}"
                + (
                    f" ({'rank' if len(c['ranks']) == 1 else 'ranks'} {rank_ranges(c['ranks'], limit=4)})"
                    if ranked
                    else ""
                )
                for c in n["compiles"]
            )
            out.append(
                f"  {'  ' * depth}{short_path(n['file'])}:{n['line']} {n['function']}"
                + (f": {comp}" if comp else "")
            )
            walk(n["children"], depth + 1)

    walk(roots, 0)
    if len(out) > limit + 1:
        out = out[: limit + 1] + [f"  ... {len(out) - limit - 1} more line(s) (see --json stack_trie)"]
    out.append("")
    return out
