"""Compare two reports (before/after a code change, two torch versions, two ranks): a diff dict.

Pure: two report dicts (`fxlens.report.build_report`) in, one JSON-ready dict out. Items are
matched by what a user recognises, never by compile id (ids shift as soon as one break is added):
user function, file (relative to the script's folder, or its base name), line and reason. A break
with the same function, file and reason on another line reads as "moved", not as new plus gone.
"""

from __future__ import annotations

import os
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable

DIFF_VERSION = 1

#: counts where B having more than A makes B worse (exit status 1 of `fxlens diff`)
GATED = (
    "graphs",
    "graph_breaks",
    "graph_break_sites",
    "recompiles",
    "recompile_limit_hits",
    "compile_failures",
    "kernels",
    "fallbacks",
)
#: counts shown beside them, not gated (more nodes or guards is not a regression by itself)
INFO = ("graph_nodes", "guards")


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


def _script(report: dict) -> str | None:
    return (report.get("source") or {}).get("script")


def _counts(r: dict) -> dict[str, int]:
    guards = sum(m.get("guard_count") or 0 for m in (r.get("compile_times") or {}).get("per_compile", []))
    return {
        "graphs": len(r["graphs"]),
        "graph_breaks": sum(b["count"] for b in r["graph_breaks"]),
        "graph_break_sites": len(r["graph_breaks"]),
        "recompiles": len(r["recompiles"]),
        "recompile_limit_hits": len(r["recompile_limit_hits"]),
        "compile_failures": len(r.get("failures") or []),
        "kernels": len(r.get("kernels") or []),
        "fallbacks": sum(f["count"] for f in r.get("fallbacks") or []),
        "graph_nodes": sum(g["num_nodes"] or 0 for g in r["graphs"]),
        "guards": guards,
    }


def match(
    a: list[dict], b: list[dict], exact: Callable[[dict], tuple], loose: Callable[[dict], tuple]
) -> list[tuple[dict | None, dict | None, bool]]:
    """Pair items of A and B: (a, b, moved). Exact keys first; what is left is paired by the loose
    key (same thing, another line), in line order, and marked moved; the rest is new or gone."""
    by_key: dict[tuple, list[dict]] = defaultdict(list)
    for x in b:
        by_key[exact(x)].append(x)
    pairs: list[tuple[dict | None, dict | None, bool]] = []
    rest_a = []
    for x in a:
        if by_key.get(exact(x)):
            pairs.append((x, by_key[exact(x)].pop(0), False))
        else:
            rest_a.append(x)
    rest_b = [x for xs in by_key.values() for x in xs]
    loose_b: dict[tuple, list[dict]] = defaultdict(list)
    for x in sorted(rest_b, key=lambda x: x.get("line") or 0):
        loose_b[loose(x)].append(x)
    for x in sorted(rest_a, key=lambda x: x.get("line") or 0):
        if loose_b.get(loose(x)):
            pairs.append((x, loose_b[loose(x)].pop(0), True))
        else:
            pairs.append((x, None, False))
    pairs += [(None, x, False) for xs in loose_b.values() for x in xs]
    return pairs


def _status(a: dict | None, b: dict | None, moved: bool, fields: Iterable[str]) -> str:
    if a is None:
        return "new"
    if b is None:
        return "gone"
    if moved:
        return "moved"
    return "changed" if any(a.get(f) != b.get(f) for f in fields) else "same"


def _items(pairs, fields: tuple[str, ...], ident: tuple[str, ...]) -> list[dict]:
    """One diff item per pair: identity from B (or A when gone), then A's and B's values."""
    out = []
    for a, b, moved in pairs:
        src = b if b is not None else a
        item = {"status": _status(a, b, moved, fields), **{k: src.get(k) for k in ident}}
        item["a"] = None if a is None else {k: a.get(k) for k in ("line", *fields)}
        item["b"] = None if b is None else {k: b.get(k) for k in ("line", *fields)}
        out.append(item)
    order = {"new": 0, "gone": 1, "changed": 2, "moved": 3, "same": 4}
    return sorted(out, key=lambda i: (order[i["status"]], i.get("file") or "", i.get("line") or 0))


def _keyed(items: list[dict], script: str | None, alias: str | None = None) -> list[dict]:
    return [{**x, "file": file_key(x.get("file"), script, alias)} for x in items]


def _per_function(r: dict, script: str | None, alias: str | None = None) -> dict[tuple[str, str], dict]:
    """Graphs, nodes, guards, kernels, bytes and compile time summed per (function, file)."""
    cid_fn: dict[tuple, tuple[str, str]] = {}
    out: dict[tuple[str, str], dict] = {}

    def slot(fn: str, fk: str, line: int | None = None) -> dict:
        s = out.setdefault(
            (fn, fk), {"function": fn, "file": fk, "line": line, "graphs": 0, "graph_nodes": 0}
        )
        s.update(guards=s.get("guards", 0), compile_s=s.get("compile_s", 0.0), kernels=s.get("kernels", 0))
        s.update(bytes_read=s.get("bytes_read", 0), bytes_written=s.get("bytes_written", 0))
        s.setdefault("ops", set())
        s.setdefault("kernel_names", set())
        return s

    for g in r["graphs"]:
        fk = file_key(g["file"], script, alias)
        cid_fn[(g["compile_id"], g["rank"])] = (g["function"], fk)
        s = slot(g["function"], fk, g["line"])
        s["graphs"] += 1
        s["graph_nodes"] += g["num_nodes"] or 0
        s["ops"].update(o.split(".")[-1] if o.startswith("aten.") else o for o in g["ops"])
    for m in (r.get("compile_times") or {}).get("per_compile", []):
        fn, fk = cid_fn.get((m["compile_id"], m["rank"]), (m["function"], "?"))
        s = slot(fn, fk)
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


def _guard_sets(r: dict, script: str | None, alias: str | None = None) -> dict[tuple[str, str], set[str]]:
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


def _doctor(r: dict, script: str | None, alias: str | None = None) -> dict[tuple[str, str], dict] | None:
    docs = [e for e in r.get("events") or [] if e.get("event") == "doctor" and e.get("functions")]
    if not docs:
        return None
    return {(f["function"], file_key(f.get("file"), script, alias)): f for f in docs[-1]["functions"]}


def compare(a: dict, b: dict) -> dict:
    """The diff of two reports (the dicts of `build_report`; `fxlens report --json` output too).

    Returns:
        `{version, a, b, counts, worse, worse_on, better_on, graph_breaks, recompile_causes,
        recompile_limit_hits, failures, functions, guards, fallbacks, compile_time, doctor}`;
        each item list holds `{status: new|gone|changed|moved|same, function, file, line, ..., a, b}`.
    """
    sa, sb = _script(a), _script(b)
    alias = os.path.basename(sb) if sa and sb else None
    ca, cb = _counts(a), _counts(b)
    counts = [
        {"name": n, "a": ca[n], "b": cb[n], "delta": cb[n] - ca[n], "gated": n in GATED}
        for n in (*GATED, *INFO)
    ]
    worse_on = [c["name"] for c in counts if c["gated"] and c["delta"] > 0]
    better_on = [c["name"] for c in counts if c["gated"] and c["delta"] < 0]

    brk_a, brk_b = _keyed(a["graph_breaks"], sa, alias), _keyed(b["graph_breaks"], sb)
    breaks = _items(
        match(
            brk_a,
            brk_b,
            lambda x: (x["function"], x["file"], x["line"], x["reason"]),
            lambda x: (x["function"], x["file"], x["reason"]),
        ),
        ("count",),
        ("function", "file", "line", "reason", "source"),
    )
    causes = _items(
        match(
            _keyed(a.get("recompile_causes") or [], sa, alias),
            _keyed(b.get("recompile_causes") or [], sb),
            lambda x: (x["function"], x["file"], x["line"], x["subject"]),
            lambda x: (x["function"], x["file"], x["subject"]),
        ),
        ("count", "message"),
        ("function", "file", "line", "kind", "subject", "fix"),
    )
    limits = _items(
        match(
            _keyed(a["recompile_limit_hits"], sa, alias),
            _keyed(b["recompile_limit_hits"], sb),
            lambda x: (x["function"], x["file"], x["line"]),
            lambda x: (x["function"], x["file"]),
        ),
        ("limit",),
        ("function", "file", "line", "limit_type"),
    )
    fails = _items(
        match(
            _grouped_failures(a, sa, alias),
            _grouped_failures(b, sb),
            lambda x: (x["function"], x["file"], x["line"], x["fail_type"]),
            lambda x: (x["function"], x["file"], x["fail_type"]),
        ),
        ("count", "fail_reason"),
        ("function", "file", "line", "fail_type"),
    )
    fa, fb = _per_function(a, sa, alias), _per_function(b, sb)
    fields = (
        "graphs",
        "graph_nodes",
        "guards",
        "kernels",
        "bytes_read",
        "bytes_written",
        "ops",
        "kernel_names",
    )
    functions = _items(
        [(fa.get(k), fb.get(k), False) for k in sorted(set(fa) | set(fb))],
        fields,
        ("function", "file", "line"),
    )
    for item in functions:  # compile time is shown, never a reason for "changed" (it is noise)
        item["compile_s"] = {
            "a": (fa.get((item["function"], item["file"])) or {}).get("compile_s"),
            "b": (fb.get((item["function"], item["file"])) or {}).get("compile_s"),
        }
    ga, gb = _guard_sets(a, sa, alias), _guard_sets(b, sb)
    guards = [
        {
            "function": k[0],
            "file": k[1],
            "new": sorted(gb.get(k, set()) - ga.get(k, set())),
            "gone": sorted(ga.get(k, set()) - gb.get(k, set())),
        }
        for k in sorted(set(ga) | set(gb))
    ]
    guards = [g for g in guards if g["new"] or g["gone"]]
    fba, fbb = Counter(), Counter()
    for f in a.get("fallbacks") or []:
        fba[f["op"]] += f["count"]
    for f in b.get("fallbacks") or []:
        fbb[f["op"]] += f["count"]
    fallbacks = [
        {
            "op": op,
            "a": fba.get(op, 0),
            "b": fbb.get(op, 0),
            "status": _count_status(fba.get(op), fbb.get(op)),
        }
        for op in sorted(set(fba) | set(fbb))
    ]
    return {
        "version": DIFF_VERSION,
        "a": _side(a),
        "b": _side(b),
        "counts": counts,
        "worse": bool(worse_on),
        "worse_on": worse_on,
        "better_on": better_on,
        "graph_breaks": breaks,
        "recompile_causes": causes,
        "recompile_limit_hits": limits,
        "failures": fails,
        "functions": functions,
        "guards": guards,
        "fallbacks": fallbacks,
        "compile_time": {
            "a": (a.get("compile_times") or {}).get("total_s"),
            "b": (b.get("compile_times") or {}).get("total_s"),
        },
        "doctor": _doctor_diff(_doctor(a, sa, alias), _doctor(b, sb)),
    }


def _count_status(a: int | None, b: int | None) -> str:
    if not a:
        return "new"
    if not b:
        return "gone"
    return "same" if a == b else "changed"


def _grouped_failures(r: dict, script: str | None, alias: str | None = None) -> list[dict]:
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


def _doctor_diff(da: dict | None, db: dict | None) -> list[dict] | None:
    """Per function eager/compiled ms and speedup, only when both sessions have doctor timings."""
    if da is None or db is None:
        return None
    out = []
    for k in sorted(set(da) | set(db)):
        x, y = da.get(k) or {}, db.get(k) or {}
        out.append(
            {
                "function": k[0],
                "file": k[1],
                **{
                    f: {"a": x.get(f), "b": y.get(f)}
                    for f in ("eager_ms", "compiled_ms", "speedup", "compile_s")
                },
            }
        )
    return out


def _side(r: dict) -> dict:
    src = r.get("source") or {}
    return {
        "path": src.get("path"),
        "kind": src.get("kind"),
        "script": src.get("script"),
        "backend": src.get("backend"),
        "ranks": r.get("ranks"),
    }
