"""One report summarised for comparison, keyed by what a user recognises across runs.

`file_key` names a file the same way in two runs; `per_function` sums graphs, nodes, guards,
kernels and compile time per (function, file); `guard_sets` holds each function's guards without
per-process noise; `grouped_failures` and `doctor_timings` key failures and doctor timings alike.
fxlens.diff.compare pairs these up.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict


def file_key(path: str | None, script: str | None, alias: str | None = None) -> str:
    """How a file is matched across runs: relative to the script's folder when inside it, else its
    base name (two checkouts, two machines, a TORCH_TRACE without a script). The script itself is
    `alias` when given: A's script is matched with B's even if it was renamed (before.py, after.py)."""
    if not path:
        return "?"
    if script and alias and os.path.abspath(path) == os.path.abspath(script):
        return alias
    if script:
        root = os.path.dirname(os.path.abspath(script))
        if path.startswith(root.rstrip("/") + "/"):
            return os.path.relpath(path, root)
    return os.path.basename(path)


def per_function(r: dict, script: str | None, alias: str | None = None) -> dict[tuple[str, str], dict]:
    """Graphs, nodes, guards, kernels, bytes and compile time summed per (function, file)."""
    cid_fn: dict[tuple, tuple[str, str]] = {}
    out: dict[tuple[str, str], dict] = {}

    def slot(fn: str, fk: str, line: int | None = None, path: str | None = None) -> dict:
        s = out.setdefault(
            (fn, fk), {"function": fn, "file": fk, "line": line, "graphs": 0, "graph_nodes": 0}
        )
        if s["line"] is None:
            s["line"] = line
        if path and "own_file" not in s:  # the side's own name for the file (A's script unaliased)
            s["own_file"] = file_key(path, script)
        s.update(guards=s.get("guards", 0), compile_s=s.get("compile_s", 0.0), kernels=s.get("kernels", 0))
        s.update(bytes_read=s.get("bytes_read", 0), bytes_written=s.get("bytes_written", 0))
        s.setdefault("ops", set())
        s.setdefault("kernel_names", set())
        return s

    for g in r["graphs"]:
        fk = file_key(g["file"], script, alias)
        cid_fn[(g["compile_id"], g["rank"])] = (g["function"], fk)
        s = slot(g["function"], fk, g["line"], g["file"])
        s["graphs"] += 1
        s["graph_nodes"] += g["num_nodes"] or 0
        s["ops"].update(o.split(".")[-1] if o.startswith("aten.") else o for o in g["ops"])
    for m in (r.get("compile_times") or {}).get("per_compile", []):
        # a compile with no graph (it failed, or captured nothing) is placed at its own frame
        own = (m["function"], file_key(m.get("file"), script, alias))
        fn, fk = cid_fn.get((m["compile_id"], m["rank"]), own)
        s = slot(fn, fk, m.get("line"), m.get("file"))
        s["guards"] += m.get("guard_count") or 0
        s["compile_s"] += m.get("total_s") or 0.0
    for k in r.get("kernels") or []:
        fn, fk = cid_fn.get((k["compile_id"], k["rank"]), ("?", "?"))
        s = slot(fn, fk)
        s["kernels"] += 1
        s["bytes_read"] += k["bytes_read"] or 0
        s["bytes_written"] += k["bytes_written"] or 0
        # kernel names carry the graph kind and ops; the index varies with fusion, so drop it
        s["kernel_names"].add(re.sub(r"_\d+_", "_", k["name"]))
    for s in out.values():
        s["ops"] = sorted(s["ops"])
        s["kernel_names"] = sorted(s["kernel_names"])
        s["compile_s"] = round(s["compile_s"], 3)
    return out


_GUARD_NOISE = (
    (re.compile(r"^[|+\- ]+"), ""),  # the guard tree's drawing
    (re.compile(r"\s+#.*$"), ""),  # where in torch the guard was made
    (re.compile(r"\b\d{6,}\b"), "<id>"),  # object ids differ in every process
    (re.compile(r"(__builtins_dict___)\d+"), r"\1N"),  # numbered per process too
)
# lines of the guard tree that are not guards: timings, and the accessor nodes of the tree
_NOT_GUARDS = re.compile(r"^(Guard latency|GuardManager:|RootGuardManager|TREE_GUARD_MANAGER)")


def normalise_guard(line: str) -> str:
    """A guard line without tree drawing, torch source comment or object ids (stable across runs)."""
    for pattern, repl in _GUARD_NOISE:
        line = pattern.sub(repl, line)
    return line.strip()


def guard_sets(r: dict, script: str | None, alias: str | None = None) -> dict[tuple[str, str], set[str]]:
    cid_fn = {
        (g["compile_id"], g["rank"]): (g["function"], file_key(g["file"], script, alias)) for g in r["graphs"]
    }
    sets: dict[tuple[str, str], set[str]] = defaultdict(set)
    for g in r.get("guards") or []:
        key = cid_fn.get((g["compile_id"], g["rank"]))
        if key:
            sets[key].update(
                n for ln in g["guards"] if (n := normalise_guard(ln)) and not _NOT_GUARDS.match(n)
            )
    return sets


def doctor_timings(
    r: dict, script: str | None, alias: str | None = None
) -> dict[tuple[str, str], dict] | None:
    docs = [e for e in r.get("events") or [] if e.get("event") == "doctor" and e.get("functions")]
    if not docs:
        return None
    return {(f["function"], file_key(f.get("file"), script, alias)): f for f in docs[-1]["functions"]}


def grouped_failures(r: dict, script: str | None, alias: str | None = None) -> list[dict]:
    groups: dict[tuple, dict] = {}
    for f in r.get("failures") or []:
        fk = file_key(f.get("file"), script, alias)
        g = groups.setdefault(
            (f["function"], fk, f.get("line"), f["fail_type"]),
            {
                "function": f["function"],
                "file": fk,
                "line": f.get("line"),
                "fail_type": f["fail_type"],
                "fail_reason": f["fail_reason"],
                "count": 0,
            },
        )
        g["count"] += 1
    return list(groups.values())
