"""`fxlens doctor`'s findings: what to change, where, ranked by structure, then by what it cost.

Inputs are the per-function rows of fxlens.doctor.stats and the report of the compiled run's
session (graph breaks, recompile root causes, limit hits, compile metrics). Every finding is
`{kind, message, file, line, fix, cost_ms, function}`; `cost_ms` estimates the milliseconds the
problem cost over this run (0 when it cannot be measured from one run: those rank last).
Structural findings (PINNED: a failed compiled run, no graph captured) rank above any cost.
The findings on speed are fxlens.doctor.speed's.
"""

from __future__ import annotations

import re

from fxlens.doctor.finding import finding as _finding
from fxlens.doctor.finding import loc as _loc
from fxlens.doctor.finding import simple as _simple
from fxlens.doctor.speed import no_graph, timing_findings

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
    "eager_python_overhead",
    "timing_inconclusive",
    "never_called",
)

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
        out.append(no_graph(rows))
    out += timing_findings(rows, cuda, breaks_in, failed, load, ran_eagerly)
    out += _recompile_findings(rows, report)
    out += breaks
    out += _usage_findings(rows, graphs)
    return _ranked(out, ran_eagerly)


def _ranked(out: list[dict], ran_eagerly: bool) -> list[dict]:
    """PINNED kinds first, then by cost, ties in KINDS order, then by place."""
    rank = {k: i for i, k in enumerate(KINDS)}
    pinned = {k: i for i, k in enumerate(PINNED)}
    # a failed compiled run, then "no graph": they outrank any cost, nothing measured means much then;
    # the wrapper that caused "no graph" comes right after it
    if ran_eagerly:
        pinned["compiled_after_wrap"] = len(PINNED)
    return sorted(
        out,
        key=lambda f: (
            pinned.get(f["kind"], len(pinned)),
            -f["cost_ms"],
            rank.get(f["kind"], 99),
            f["file"] or "",
            f["line"] or 0,
        ),
    )
