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

from fxlens.diff.compiletime import compile_time
from fxlens.diff.summaries import doctor_timings, file_key, grouped_failures, guard_sets, per_function
from fxlens.report.counts import report_counts
from fxlens.report.exits import how_it_ended

DIFF_VERSION = 1

#: counts where B having more than A makes B worse (exit status 1 of `fxlens diff`)
GATED = (
    "graphs",
    "graph_breaks",
    "graph_break_sites",
    "eager_frames",
    "recompiles",
    "recompile_limit_hits",
    "compile_failures",
    "kernels",
    "fallbacks",
)
#: counts shown beside them, not gated (more nodes or guards is not a regression by itself)
INFO = ("graph_nodes", "guards")
#: counts that rise because B compiles at all when A captured no graph (everything in A ran
#: eagerly): more of these is the fix working (`DDP(torch.compile(m))` for `torch.compile(DDP(m))`)
FROM_NOTHING = ("graphs", "graph_breaks", "graph_break_sites", "recompiles", "kernels", "fallbacks")


def _script(report: dict) -> str | None:
    return (report.get("source") or {}).get("script")


def _never_compiled(r: dict) -> bool:
    """Nothing of torch.compile in R: no graph, no compile attempt, no torch.compile call seen."""
    return not (
        r["graphs"]
        or (r.get("compile_times") or {}).get("per_compile")
        or r.get("failures")
        or any(isinstance(e, dict) and e.get("event") == "compile_call" for e in r.get("events") or [])
    )


def side_failure(r: dict) -> str | None:
    """Why one side cannot be judged by its counts (its script failed, was interrupted, or never
    compiled anything), in words; None when its counts mean what they say."""
    src = r.get("source") or {}
    never = _never_compiled(r)
    before = " before compiling anything" if never else ""
    code = src.get("exit_code")
    if src.get("interrupted"):
        return f"its run was interrupted{before}"
    if isinstance(code, int) and not isinstance(code, bool) and code != 0:
        return f"its script {how_it_ended(code, src.get('timed_out'))}{before}"
    if never:
        return "it compiled nothing: no torch.compile call, compile or graph was recorded"
    if cut := r.get("truncated"):  # a job killed mid-write: fewer counts is the cut, not a fix
        logs = ", ".join(f"{t.get('log')}, line {t.get('line')}" for t in cut[:3])
        return f"its trace ends mid-record ({logs}): the job was killed, or the log cut, while torch wrote it"
    return None


def _counts(r: dict) -> dict[str, int]:
    guards = sum(m.get("guard_count") or 0 for m in (r.get("compile_times") or {}).get("per_compile", []))
    n = report_counts(r)  # as the report and the budgets count
    return {
        "graphs": n["graphs"],
        "graph_breaks": n["graph_breaks"],
        "graph_break_sites": len(r["graph_breaks"]),
        "eager_frames": n["eager_frames"],
        "recompiles": n["recompiles"],
        "recompile_limit_hits": len(r["recompile_limit_hits"]),
        "compile_failures": len(r.get("failures") or []),
        "kernels": n["kernels"],
        "fallbacks": n["fallbacks"],
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
    """One diff item per pair: identity from B (or A when gone), then A's and B's values, each with
    its own side's file and line (a gone item is at A's place in A's file, never B's)."""
    out = []
    for a, b, moved in pairs:
        src = b if b is not None else a
        item = {"status": _status(a, b, moved, fields), **{k: src.get(k) for k in ident}}
        for side, x in (("a", a), ("b", b)):
            item[side] = (
                None
                if x is None
                else {
                    "file": x.get("own_file", x.get("file")),
                    **{k: x.get(k) for k in ("line", *fields)},
                }
            )
        out.append(item)
    order = {"new": 0, "gone": 1, "changed": 2, "moved": 3, "same": 4}
    return sorted(out, key=lambda i: (order[i["status"]], i.get("file") or "", i.get("line") or 0))


def _keyed(items: list[dict], script: str | None, alias: str | None = None) -> list[dict]:
    """Items with `file` as matched across runs (A's script under B's name) and `own_file` as the
    side's own name for it (where a row of that side is shown)."""
    return [
        {**x, "file": file_key(x.get("file"), script, alias), "own_file": file_key(x.get("file"), script)}
        for x in items
    ]


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


def _count_rows(a: dict, b: dict, from_nothing: bool = False) -> list[dict]:
    ca, cb = _counts(a), _counts(b)
    return [
        {
            "name": n,
            "a": ca[n],
            "b": cb[n],
            "delta": cb[n] - ca[n],
            "gated": n in GATED,
            # a rise that is B compiling at all, where A ran everything eagerly: not worse
            **({"from_nothing": True} if from_nothing and n in FROM_NOTHING and cb[n] > ca[n] else {}),
        }
        for n in (*GATED, *INFO)
    ]


def _break_items(s: _Sides) -> list[dict]:
    return _items(
        match(
            *s.keyed("graph_breaks"),
            # the library frame that broke tells apart two breaks of one user line
            lambda x: (
                x["function"],
                x["file"],
                x["line"],
                x["reason"],
                (x.get("library") or {}).get("file"),
            ),
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
    own_a = os.path.basename(s.sa) if s.sa else None  # A's script under its own name

    def where(k: tuple[str, str]) -> str:  # guards only A had: at A's file, not B's name for it
        return own_a if k not in gb and s.alias and k[1] == s.alias and own_a else k[1]

    guards = [
        {
            "function": k[0],
            "file": where(k),
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


def compare(a: dict, b: dict, allow_failed: bool = False) -> dict:
    """The diff of two reports (the dicts of `build_report`; `fxlens report --json` output too).

    A side whose script failed (non-zero exit, interrupted) or that compiled nothing at all cannot
    be judged by its counts (a script that dies before compiling has fewer graphs than any): it is
    `failed`, and the diff is `worse` unless `allow_failed`. When A captured no graph and B did,
    the counts that rose because B compiles at all are better, not worse (`compiled_from_nothing`).

    Returns:
        `{version, a, b, counts, worse, worse_on, better_on, failed, allow_failed,
        compiled_from_nothing, graph_breaks, recompile_causes, recompile_limit_hits, failures,
        functions, guards, fallbacks, compile_time, doctor}`; each item list holds
        `{status: new|gone|changed|moved|same, function, file, line, ..., a, b}`.
    """
    s = _Sides.of(a, b)
    failed = {"a": side_failure(a), "b": side_failure(b)}
    from_nothing = not a["graphs"] and bool(b["graphs"]) and failed["a"] is None and failed["b"] is None
    # and the other way round: B captured no graph where A did (its fewer graphs are no gain)
    to_nothing = bool(a["graphs"]) and not b["graphs"] and failed["b"] is None
    counts = _count_rows(a, b, from_nothing)
    if to_nothing:
        next(c for c in counts if c["name"] == "graphs")["to_nothing"] = True
    worse_on = [
        c["name"]
        for c in counts
        if c["gated"] and (c["delta"] > 0 or c.get("to_nothing")) and not c.get("from_nothing")
    ]
    better_on = [
        c["name"]
        for c in counts
        if c["gated"] and (c["delta"] < 0 or c.get("from_nothing")) and not c.get("to_nothing")
    ]
    gate_failed = bool(failed["a"] or failed["b"]) and not allow_failed
    # compile seconds, judged on the compiling thread's CPU clock with a band for the load
    ct = compile_time(a, b, gate=not (from_nothing or to_nothing or failed["a"] or failed["b"]))
    if ct["slower"]:
        worse_on.append("compile_s")
    return {
        "version": DIFF_VERSION,
        "a": _side(a),
        "b": _side(b),
        "counts": counts,
        "worse": bool(worse_on) or gate_failed,
        "worse_on": worse_on,
        "better_on": better_on,
        "failed": failed,
        "allow_failed": allow_failed,
        "compiled_from_nothing": from_nothing,
        "compiled_to_nothing": to_nothing,
        "graph_breaks": _break_items(s),
        "recompile_causes": _cause_items(s),
        "recompile_limit_hits": _limit_items(s),
        "failures": _failure_items(s),
        "functions": _function_items(s),
        "guards": _guard_changes(s),
        "fallbacks": _fallback_changes(a, b),
        "compile_time": ct,
        "doctor": _doctor_diff(doctor_timings(a, s.sa, s.alias), doctor_timings(b, s.sb)),
        "doctor_memory": _memory_diff(_doctor_memory(a), _doctor_memory(b)),
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


def _doctor_memory(r: dict) -> dict | None:
    docs = [e for e in r.get("events") or [] if e.get("event") == "doctor" and e.get("peak_memory")]
    return docs[-1]["peak_memory"] if docs else None


def _memory_diff(ma: dict | None, mb: dict | None) -> list[dict] | None:
    """doctor's peak memory and its parts by cause (fxlens.doctor.memcauses), A -> B, when both
    sessions have them: the peaks, then each part of the peak RSS difference."""
    if not ma or not mb:
        return None
    rows = [{"what": f"peak {side}", "a": ma.get(side), "b": mb.get(side)} for side in ("eager", "compiled")]
    parts_a = {p["cause"]: p["bytes"] for p in ma.get("breakdown") or []}
    parts_b = {p["cause"]: p["bytes"] for p in mb.get("breakdown") or []}
    rows += [
        {"what": c, "a": parts_a.get(c), "b": parts_b.get(c)} for c in dict.fromkeys([*parts_a, *parts_b])
    ]
    return rows


def _side(r: dict) -> dict:
    src = r.get("source") or {}
    return {
        "path": src.get("path"),
        "kind": src.get("kind"),
        "script": src.get("script"),
        "backend": src.get("backend"),
        "ranks": r.get("ranks"),
        "exit_code": src.get("exit_code"),
        "interrupted": bool(src.get("interrupted")),
    }
