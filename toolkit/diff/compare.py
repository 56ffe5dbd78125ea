"""Compare two reports (before/after a code change, two torch versions, two ranks): a diff dict.

Pure: two report dicts (`fxlens.report.build_report`) in, one JSON-ready dict out. Items are
matched by what a user recognises, never by compile id (ids shift as soon as one break is added):
user function, file (relative to the script's folder, or its base name), line and reason. A break
with the same function, file and reason on another line reads as "moved", not as new plus gone.
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from fxlens.diff.summaries import (  # file_key, normalise_guard: public here before the split
    doctor_timings,
    file_key,
    grouped_failures,
    guard_sets,
    normalise_guard,  # noqa: F401
    per_function,
)

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


@dataclass(frozen=True)
class _Sides:
    """The two reports and how their files are keyed: A's script is matched as B's (`alias`)."""

    a: dict
    b: dict
    sa: str | None
    sb: str | None
    alias: str | None

    @classmethod
    def of(cls, a: dict, b: dict) -> _Sides:
        sa, sb = _script(a), _script(b)
        return cls(a, b, sa, sb, os.path.basename(sb) if sa and sb else None)

    def keyed(self, key: str) -> tuple[list[dict], list[dict]]:
        """A's and B's items of a report list, their files as `file_key` gives them."""
        return _keyed(self.a.get(key) or [], self.sa, self.alias), _keyed(self.b.get(key) or [], self.sb)


def _count_rows(a: dict, b: dict) -> list[dict]:
    ca, cb = _counts(a), _counts(b)
    return [
        {"name": n, "a": ca[n], "b": cb[n], "delta": cb[n] - ca[n], "gated": n in GATED}
        for n in (*GATED, *INFO)
    ]


def _break_items(s: _Sides) -> list[dict]:
    return _items(
        match(
            *s.keyed("graph_breaks"),
            lambda x: (x["function"], x["file"], x["line"], x["reason"]),
            lambda x: (x["function"], x["file"], x["reason"]),
        ),
        ("count",),
        ("function", "file", "line", "reason", "source"),
    )


def _cause_items(s: _Sides) -> list[dict]:
    return _items(
        match(
            *s.keyed("recompile_causes"),
            lambda x: (x["function"], x["file"], x["line"], x["subject"]),
            lambda x: (x["function"], x["file"], x["subject"]),
        ),
        ("count", "message"),
        ("function", "file", "line", "kind", "subject", "fix"),
    )


def _limit_items(s: _Sides) -> list[dict]:
    return _items(
        match(
            *s.keyed("recompile_limit_hits"),
            lambda x: (x["function"], x["file"], x["line"]),
            lambda x: (x["function"], x["file"]),
        ),
        ("limit",),
        ("function", "file", "line", "limit_type"),
    )


def _failure_items(s: _Sides) -> list[dict]:
    return _items(
        match(
            grouped_failures(s.a, s.sa, s.alias),
            grouped_failures(s.b, s.sb),
            lambda x: (x["function"], x["file"], x["line"], x["fail_type"]),
            lambda x: (x["function"], x["file"], x["fail_type"]),
        ),
        ("count", "fail_reason"),
        ("function", "file", "line", "fail_type"),
    )


#: what makes a function "changed" (compile time is shown beside them, never a reason: it is noise)
_FUNCTION_FIELDS = (
    "graphs",
    "graph_nodes",
    "guards",
    "kernels",
    "bytes_read",
    "bytes_written",
    "ops",
    "kernel_names",
)


def _function_items(s: _Sides) -> list[dict]:
    fa, fb = per_function(s.a, s.sa, s.alias), per_function(s.b, s.sb)
    functions = _items(
        [(fa.get(k), fb.get(k), False) for k in sorted(set(fa) | set(fb))],
        _FUNCTION_FIELDS,
        ("function", "file", "line"),
    )
    for item in functions:
        item["compile_s"] = {
            "a": (fa.get((item["function"], item["file"])) or {}).get("compile_s"),
            "b": (fb.get((item["function"], item["file"])) or {}).get("compile_s"),
        }
    return functions


def _guard_changes(s: _Sides) -> list[dict]:
    """Per function, the guards B has and A had not, and those gone; functions without change left out."""
    ga, gb = guard_sets(s.a, s.sa, s.alias), guard_sets(s.b, s.sb)
    guards = [
        {
            "function": k[0],
            "file": k[1],
            "new": sorted(gb.get(k, set()) - ga.get(k, set())),
            "gone": sorted(ga.get(k, set()) - gb.get(k, set())),
        }
        for k in sorted(set(ga) | set(gb))
    ]
    return [g for g in guards if g["new"] or g["gone"]]


def _fallback_changes(a: dict, b: dict) -> list[dict]:
    fba, fbb = Counter(), Counter()
    for f in a.get("fallbacks") or []:
        fba[f["op"]] += f["count"]
    for f in b.get("fallbacks") or []:
        fbb[f["op"]] += f["count"]
    return [
        {
            "op": op,
            "a": fba.get(op, 0),
            "b": fbb.get(op, 0),
            "status": _count_status(fba.get(op), fbb.get(op)),
        }
        for op in sorted(set(fba) | set(fbb))
    ]


def compare(a: dict, b: dict) -> dict:
    """The diff of two reports (the dicts of `build_report`; `fxlens report --json` output too).

    Returns:
        `{version, a, b, counts, worse, worse_on, better_on, graph_breaks, recompile_causes,
        recompile_limit_hits, failures, functions, guards, fallbacks, compile_time, doctor}`;
        each item list holds `{status: new|gone|changed|moved|same, function, file, line, ..., a, b}`.
    """
    s = _Sides.of(a, b)
    counts = _count_rows(a, b)
    worse_on = [c["name"] for c in counts if c["gated"] and c["delta"] > 0]
    better_on = [c["name"] for c in counts if c["gated"] and c["delta"] < 0]
    return {
        "version": DIFF_VERSION,
        "a": _side(a),
        "b": _side(b),
        "counts": counts,
        "worse": bool(worse_on),
        "worse_on": worse_on,
        "better_on": better_on,
        "graph_breaks": _break_items(s),
        "recompile_causes": _cause_items(s),
        "recompile_limit_hits": _limit_items(s),
        "failures": _failure_items(s),
        "functions": _function_items(s),
        "guards": _guard_changes(s),
        "fallbacks": _fallback_changes(a, b),
        "compile_time": {
            "a": (a.get("compile_times") or {}).get("total_s"),
            "b": (b.get("compile_times") or {}).get("total_s"),
        },
        "doctor": _doctor_diff(doctor_timings(a, s.sa, s.alias), doctor_timings(b, s.sb)),
    }


def _count_status(a: int | None, b: int | None) -> str:
    if not a:
        return "new"
    if not b:
        return "gone"
    return "same" if a == b else "changed"


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
