"""`fxlens doctor`'s findings: what to change, where, ranked by what it cost this run.

Inputs are the per-function rows of fxlens.doctor.stats and the report of the compiled run's
session (graph breaks, recompile root causes, limit hits, compile metrics). Every finding is
`{kind, message, file, line, fix, cost_ms, function}`; `cost_ms` estimates the milliseconds the
problem cost over this run (0 when it cannot be measured from one run: those rank last).
"""

from __future__ import annotations

import re

from fxlens.doctor.interval import fmt_speedup, is_busy, verdict
from fxlens.doctor.render import inconclusive_why, load_phrase, rerun_advice
from fxlens.trace.userframes import short_path

# structural findings, in this order, before any measured cost: while they hold, no per-call
# number says anything about the compiler (it failed, or it never ran)
PINNED = ("compiled_run_failed", "no_graph_captured")
# kinds in the order they rank among findings of equal cost
KINDS = (
    "compiled_run_failed",
    "no_graph_captured",
    "compiled_after_wrap",
    "slower_than_eager",
    "compile_not_amortised",
    "recompile_limit",
    "static_shapes_changing",
    "recompile",
    "graph_break",
    "dynamic_unneeded",
    "eager_implausibly_slow",
    "timing_inconclusive",
    "never_called",
)
# eager slower than this many times the time its work takes on a core of its own is implausible
IMPLAUSIBLE_FACTOR = 4.0
# a process that got less than this share of the wall time while eager ran was waiting for a core
WAITING_SHARE = 0.5

# (pattern on torch's graph-break reason, what to change) - first match wins
BREAK_FIXES: list[tuple[re.Pattern, str]] = [
    # torch._dynamo.graph_break() left in the code
    (re.compile(r"graph_break\(\)"), "remove the `torch._dynamo.graph_break()` call"),
    # print / logging inside the compiled region
    (
        re.compile(r"builtin operator|print", re.I),
        "move the `print`/logging out of the compiled function (or log tensors after it returns)",
    ),
    # .item() / float(tensor) read a Python number
    (
        re.compile(r"\.item\(\)|capture_scalar_outputs", re.I),
        "keep the value a tensor, or set `torch._dynamo.config.capture_scalar_outputs = True`",
    ),
    # .tolist() on a float tensor
    (re.compile(r"tolist", re.I), "keep the data in a tensor instead of calling `.tolist()`"),
    # `if tensor:` control flow on data
    (
        re.compile(r"data-dependent branch", re.I),
        "make it branchless (`torch.where`, `torch.clamp`) or use `torch.cond`",
    ),
    # a C function or a function on Dynamo's skip list
    (
        re.compile(r"skipped|C function|builtin", re.I),
        "move the call out of the compiled function, or compute it once outside and pass the result in",
    ),
]


def _loc(file: str | None, line: int | None) -> str:
    return f"{short_path(file)}:{line}" if file else "?"


def _simple(function: str | None) -> str:
    """`Model.forward` -> `forward`, `DistributedDataParallel(Model).forward` -> `forward`."""
    return (function or "?").rsplit(".", 1)[-1]


def _finding(kind: str, message: str, file, line, fix: str, cost_ms: float, function: str | None) -> dict:
    return {
        "kind": kind,
        "message": message,
        "file": file,
        "line": line,
        "fix": fix,
        "cost_ms": round(max(cost_ms, 0.0), 3),
        "function": function,
    }


def _owner(rows: list[dict], file: str, function: str, call_path: list[dict]) -> dict | None:
    """The compiled function a graph break (or recompile) belongs to, matching the call path."""
    frames = [*call_path, {"file": file, "function": function}]
    for fr in frames:
        for row in rows:
            if row["file"] == fr.get("file") and _simple(row["function"]) == fr.get("function"):
                return row
    return rows[0] if len(rows) == 1 else None


def break_fix(reason: str, hints: list[str], source: str) -> str:
    """What to change for one graph break: a rule from BREAK_FIXES, else torch's own hint."""
    for pattern, fix in BREAK_FIXES:
        if pattern.search(reason):
            return fix
    hint = next((h for h in hints if "report an issue" not in h and "file an issue" not in h), "")
    return hint or f"move `{source.strip()}` out of the compiled function"


def _never_called(row: dict) -> dict:
    fn, at = row["function"], row["compiled_at"]
    return _finding(
        "never_called",
        f"`{fn}` is compiled at {_loc(at['file'], at['line'])} but never called in this run",
        at["file"],
        at["line"],
        "call the object torch.compile returned (not the original), or remove the torch.compile call",
        0.0,
        fn,
    )


def _measured(row: dict) -> str:
    """`speedup 0.31x [0.28, 0.35] from 40 pairs`: the figure a timing finding rests on."""
    s = row.get("samples") or {}
    n = min(s.values()) if s else 0
    what = "interleaved pairs" if (row.get("timing") or {}).get("method") == "interleaved" else "calls a side"
    return f"speedup {fmt_speedup(row['speedup'], row.get('speedup_interval'))} from {n} {what}"


def _slower_than_eager(row: dict, cuda: bool, breaks: int) -> dict:
    fn, at = row["function"], row["compiled_at"]
    where = _loc(at["file"], at["line"])
    e, c, cs, n = row["eager_ms"], row["compiled_ms"], row["compile_s"] or 0.0, row["calls"]
    extra = f'; CUDA graphs (`mode="reduce-overhead"` at {where}) cut per-call overhead' if cuda else ""
    first = f"remove the {breaks} graph break(s) in `{fn}` (below) or " if breaks else ""
    return _finding(
        "slower_than_eager",
        f"`{fn}` is slower compiled than eager: {c:.4g} ms vs {e:.4g} ms per call "
        f"({c / e:.2f}x slower; {_measured(row)}) over {n} calls, plus {cs:.2f} s compiling",
        at["file"],
        at["line"],
        f"{first}compile a larger region (the whole step) so the fixed per-call cost is "
        f"amortised; if neither helps, do not compile `{fn}`: "
        f"drop torch.compile at {where}{extra}",
        (c - e) * n + cs * 1000,
        fn,
    )


def _compile_not_amortised(row: dict) -> dict:
    fn, at = row["function"], row["compiled_at"]
    where = _loc(at["file"], at["line"])
    e, c, cs, n = row["eager_ms"], row["compiled_ms"], row["compile_s"] or 0.0, row["calls"]
    backend = str(row["options"].get("backend") or "")
    cache = (
        "; inductor's on-disk FX graph cache (on by default) makes the next run compile faster, "
        "and torch.compiler.save_cache_artifacts()/load_cache_artifacts() carry it to other machines"
        if backend == "inductor"
        else ""
    )
    return _finding(
        "compile_not_amortised",
        f"`{fn}` is {e / c:.2f}x faster compiled ({_measured(row)}), but its {cs:.2f} s of compiling pays off only "
        f"after {row['break_even_calls']} calls and this run makes {n}",
        at["file"],
        at["line"],
        f"for runs this short, skip torch.compile at {where} (e.g. behind a flag); it pays "
        f"off in runs of more than {row['break_even_calls']} calls{cache}",
        cs * 1000 - (e - c) * n,
        fn,
    )


def _inconclusive(row: dict, load: dict) -> dict:
    fn, at = row["function"], row["compiled_at"]
    why = inconclusive_why(load, row.get("samples"), row.get("speedup_interval"), row.get("timing"))
    return _finding(
        "timing_inconclusive",
        f"`{fn}`: inconclusive: {why} ({_measured(row)}); no verdict on its speed",
        at["file"],
        at["line"],
        rerun_advice(load, row.get("timing")),
        0.0,
        fn,
    )


def _implausible_eager(row: dict, load: dict) -> dict | None:
    """Eager slower than its work explains: the process waited for a core (a busy machine)."""
    t = row.get("timing") or {}
    work, share = t.get("work") or {}, (t.get("cpu_share") or {}).get("eager")
    bound, e = work.get("quiet_bound_ms"), row["eager_ms"]
    slow = bound is not None and e is not None and e > IMPLAUSIBLE_FACTOR * bound
    waiting = share is not None and share < WAITING_SHARE
    if not (slow or waiting):
        return None
    fn, at = row["function"], row["compiled_at"]
    what = (
        f"{work.get('torch_calls', '?')} torch calls, {work.get('flops', 0) / 1e6:.3g} MFLOP, "
        f"{work.get('bytes_out', 0) / 2**20:.3g} MiB written"
    )
    msg = f"eager `{fn}` takes {e:.4g} ms per call"
    if slow:
        msg += f" for work ({what}) that takes under {bound:.3g} ms on a core of its own"
    if waiting:
        msg += f"; the process ran only {share:.0%} of that time"
    busy = is_busy(load)
    msg += f": {'the machine was busy' if busy else 'it waited (a sleep, I/O, a lock, or a busy machine)'}, {load_phrase(load)}"
    return _finding(
        "eager_implausibly_slow",
        msg + "; every time here is inflated",
        at["file"],
        at["line"],
        rerun_advice(load) if busy else "look for what the function waits on; " + rerun_advice(load),
        0.0,
        fn,
    )


def _timing_findings(
    rows: list[dict],
    cuda: bool,
    breaks_in: dict[int, int],
    failed: str | None = None,
    load: dict | None = None,
    ran_eagerly: bool = False,
) -> list[dict]:
    """Findings on speed, each only when the speedup's interval allows it (verdict not inconclusive)."""
    out = []
    load = load or {}
    for row in rows:
        if not row["calls"] and not failed:
            out.append(_never_called(row))
            continue
        e, c, n = row["eager_ms"], row["compiled_ms"], row["calls"]
        if e is None or c is None:
            continue
        if (odd := _implausible_eager(row, load)) is not None:
            out.append(odd)
        if ran_eagerly:  # no graph: the verdict is on Dynamo's overhead, said by no_graph_captured
            continue
        said = row.get("verdict") or verdict(row.get("speedup_interval"))
        if said == "slower":
            out.append(_slower_than_eager(row, cuda, breaks_in.get(id(row), 0)))
        elif said == "faster" and row["break_even_calls"] is not None and row["break_even_calls"] > n:
            out.append(_compile_not_amortised(row))
        elif said == "inconclusive":
            out.append(_inconclusive(row, load))
    return out


def _no_graph(rows: list[dict]) -> dict:
    """torch.compile was called, its objects were called, and Dynamo captured not one graph."""
    called = [r for r in rows if r["calls"]]
    row = next((r for r in called if r.get("wrapped_in")), called[0])
    at = row["compiled_at"]
    where = _loc(at["file"], at["line"])
    timed = f" ({_measured(row)})" if row.get("speedup") is not None else ""
    if row.get("wrapped_in"):
        cause = (
            f"Dynamo skipped the {row['wrapped_in']} wrapper's forward compiled at {where}, so the model "
            "inside never reached the compiler"
        )
        fix = (
            f"compile the module, then wrap it: `model.compile()` (or `model = torch.compile(model)`) "
            f"before `{row['wrapped_in']}(model, ...)`, and drop torch.compile at {where}"
        )
    else:
        cause = f"every frame of `{row['function']}` was skipped or broke before any op"
        fix = "see the graph breaks below for why each frame fell back; `fullgraph=True` turns the first into an error"
    return _finding(
        "no_graph_captured",
        f"torch.compile captured no graph: everything ran eagerly{timed}; {cause}",
        at["file"],
        at["line"],
        fix,
        0.0,
        row["function"],
    )


def _break_findings(rows: list[dict], breaks: list[dict]) -> list[dict]:
    total = sum((r["compiled_ms"] or 0) * r["calls"] for r in rows) or 1.0
    owners = [_owner(rows, b["file"], b["function"], b.get("call_path") or []) for b in breaks]
    per_owner: dict[int, int] = {}
    for o in owners:
        if o is not None:
            per_owner[id(o)] = per_owner.get(id(o), 0) + 1
    out = []
    for b, row in zip(breaks, owners, strict=True):
        cost, hot = 0.0, ""
        if row is not None and row["eager_ms"] is not None and row["compiled_ms"] is not None:
            # a break's share of what the function lost against eager (breaks are the usual cause)
            lost = (row["compiled_ms"] - row["eager_ms"]) * row["calls"]
            cost = max(lost, 0.0) / per_owner[id(row)]
            share = row["compiled_ms"] * row["calls"] / total
            hot = f", in `{row['function']}` ({share:.0%} of compiled call time, {row['calls']} calls)"
        out.append(
            _finding(
                "graph_break",
                f"graph break at {_loc(b['file'], b['line'])}{hot}: {b['reason']}"
                + (f" -- `{b['source']}`" if b.get("source") else ""),
                b["file"],
                b["line"],
                break_fix(b["reason"], b.get("hints") or [], b.get("source") or ""),
                cost,
                b["function"],
            )
        )
    return out


def _static_shapes_changing(row: dict, cause: dict, cost: float) -> dict:
    at = row["compiled_at"]
    forced = row["options"].get("dynamic") is False
    return _finding(
        "static_shapes_changing",
        f"`{row['function']}` is compiled for static shapes but its input shapes change "
        f"({cause['message']}): {cause['count']} recompile(s)",
        at["file"],
        at["line"],
        (
            f"`dynamic=False` at {_loc(at['file'], at['line'])} forces a recompile per new shape: "
            "drop it (the default turns dynamic after the first change), pass `dynamic=True`, "
            f"or mark the changing dimension dynamic ({cause['subject']})"
            if forced
            else cause["fix"]
        ),
        cost,
        row["function"],
    )


def _cause_finding(rows: list[dict], cause: dict, secs: dict[str, float]) -> dict:
    """One recompile cause; a size change in a function compiled static reads as its own kind."""
    row = _owner(rows, cause["file"], cause["function"], [])
    cost = sum(secs.get(cid, 0.0) for cid in cause["compile_ids"]) * 1000
    if (
        cause["kind"] == "size"
        and row is not None
        and row["options"].get("dynamic") is not True
        and row["distinct_shapes"] >= 3
    ):
        return _static_shapes_changing(row, cause, cost)
    return _finding(
        "recompile",
        f"`{cause['function']}` ({_loc(cause['file'], cause['line'])}) recompiled "
        f"{cause['count']} time(s): {cause['message']}",
        cause["file"],
        cause["line"],
        cause["fix"],
        cost,
        cause["function"],
    )


def _limit_finding(rows: list[dict], hit: dict) -> dict:
    row = _owner(rows, hit["file"], hit["function"], [])
    cost = 0.0
    if row and row["eager_ms"] is not None and row["compiled_ms"] is not None:
        cost = max(row["eager_ms"] - row["compiled_ms"], 0.0) * row["calls"]
    return _finding(
        "recompile_limit",
        f"`{hit['function']}` ({_loc(hit['file'], hit['line'])}) hit the recompile limit "
        f"({hit['limit_type']}={hit['limit']}): from then on it runs eagerly, silently",
        hit["file"],
        hit["line"],
        "fix the recompile cause listed for this function; raising "
        "`torch._dynamo.config.recompile_limit` only hides it",
        cost,
        hit["function"],
    )


def _recompile_findings(rows: list[dict], report: dict) -> list[dict]:
    secs = {m["compile_id"]: m["total_s"] or 0.0 for m in report["compile_times"]["per_compile"]}
    out = [_cause_finding(rows, cause, secs) for cause in report["recompile_causes"]]
    out += [_limit_finding(rows, hit) for hit in report["recompile_limit_hits"]]
    return out


def _usage_findings(rows: list[dict], graphs: int | None = None) -> list[dict]:
    out = []
    for row in rows:
        at = row["compiled_at"]
        where = _loc(at["file"], at["line"])
        if row.get("wrapped_in"):
            # what the trace shows decides the claim: DDPOptimizer splits graphs only when there are any
            if graphs == 0:
                shown = "no graph was captured, so the whole model ran eagerly"
            elif graphs:
                shown = f"Dynamo captured {graphs} graph(s) through the wrapper (DDPOptimizer splits them at bucket boundaries)"
            else:
                shown = "the trace does not say whether a graph was captured"
            out.append(
                _finding(
                    "compiled_after_wrap",
                    f"torch.compile at {where} compiles a {row['wrapped_in']} wrapper: the model was "
                    f"wrapped first, compiled second; {shown}",
                    at["file"],
                    at["line"],
                    "compile the inner module, then wrap it: `model.compile()` then "
                    f"`{row['wrapped_in']}(model, ...)`. torch's docs ('Where to apply torch.compile?') say "
                    "torch.compile does not handle distributed wrapper modules like DDP or FSDP very well "
                    "and recommend compiling the inner module passed to the wrapper",
                    0.0,
                    row["function"],
                )
            )
        if row["options"].get("dynamic") is True and row["distinct_shapes"] == 1 and row["calls"] > 1:
            out.append(
                _finding(
                    "dynamic_unneeded",
                    f"`{row['function']}` is compiled with dynamic=True but its input shapes never changed "
                    f"in {row['calls']} calls (always {row['shapes'][0]})",
                    at["file"],
                    at["line"],
                    f"drop `dynamic=True` at {where}: static shapes let the backend specialise, and the "
                    "default (dynamic=None) still turns dynamic if a shape ever changes",
                    0.0,
                    row["function"],
                )
            )
    return out


def findings(
    rows: list[dict],
    report: dict,
    *,
    cuda: bool = False,
    failed: str | None = None,
    failed_at: tuple[str, int] | None = None,
    load: dict | None = None,
) -> list[dict]:
    """Every finding: PINNED kinds first (structural), then most costly first, ties in KINDS order.

    Args:
        rows: per-function rows (fxlens.doctor.stats.function_rows).
        report: the compiled run's report (fxlens.report.build.build_report).
        cuda: whether the script ran on CUDA (CUDA-only advice).
        failed: why the compiled run failed where the eager one did not, if it did.
        failed_at: (file, line) of the user's frame where it failed.
        load: the machine's load while timing (`{average, cores}`), for inconclusive verdicts.
    """
    out: list[dict] = []
    if failed:
        file, line = failed_at or (report["source"].get("script"), None)
        out.append(
            _finding(
                "compiled_run_failed",
                failed,
                file,
                line,
                "run `fxlens bisect` on the script to find the compiler stage at fault",
                0.0,
                None,
            )
        )
    breaks = _break_findings(rows, report["graph_breaks"])
    breaks_in: dict[int, int] = {}
    for b in report["graph_breaks"]:
        if (o := _owner(rows, b["file"], b["function"], b.get("call_path") or [])) is not None:
            breaks_in[id(o)] = breaks_in.get(id(o), 0) + 1
    # `graphs` absent: a report that cannot say (older sessions); present and empty: none captured
    graphs = len(report["graphs"]) if "graphs" in report else None
    ran_eagerly = graphs == 0 and not failed and any(r["calls"] for r in rows)
    if ran_eagerly:
        out.append(_no_graph(rows))
    out += _timing_findings(rows, cuda, breaks_in, failed, load, ran_eagerly)
    out += _recompile_findings(rows, report)
    out += breaks
    out += _usage_findings(rows, graphs)
    rank = {k: i for i, k in enumerate(KINDS)}
    pinned = {k: i for i, k in enumerate(PINNED)}
    # a failed compiled run, then "no graph": they outrank any cost, nothing measured means much then;
    # the wrapper that caused "no graph" comes right after it
    if ran_eagerly:
        pinned["compiled_after_wrap"] = len(PINNED)
    out.sort(
        key=lambda f: (
            pinned.get(f["kind"], len(pinned)),
            -f["cost_ms"],
            rank.get(f["kind"], 99),
            f["file"] or "",
            f["line"] or 0,
        )
    )
    return out
