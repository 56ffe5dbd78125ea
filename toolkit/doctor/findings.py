"""`fxlens doctor`'s findings: what to change, where, ranked by structure, then by what it cost.

Inputs are the per-function rows of fxlens.probe.stats and the report of the compiled run's
session (graph breaks, recompile root causes, limit hits, compile metrics). Every finding is
`{kind, message, file, line, fix, cost_ms, function}`; `cost_ms` estimates the milliseconds the
problem cost over this run (0 when it cannot be measured from one run: those rank last).
Structural findings (PINNED: a failed compiled run, no graph captured) rank above any cost.
The findings on speed are fxlens.doctor.speed's.
"""

from __future__ import annotations

from fxlens.backend.stages import capture_only
from fxlens.doctor.breaks import break_findings, breaks_per_owner, eager_frame_findings, outside_cost, owner
from fxlens.doctor.finding import code_action, simple, site
from fxlens.doctor.finding import finding as _finding
from fxlens.doctor.finding import loc as _loc
from fxlens.doctor.speed import no_graph, timing_findings
from fxlens.report.fixes import action, config_action

# structural findings, in this order, before any measured cost: while they hold, no per-call
# number says anything about the compiler (it failed, or it never ran)
PINNED = ("compiled_run_failed", "no_graph_captured", "capture_only_backend")
# kinds in the order they rank among findings of equal cost
KINDS = (
    "compiled_run_failed",
    "no_graph_captured",
    "capture_only_backend",
    "compiled_after_wrap",
    "slower_than_eager",
    "compile_not_amortised",
    "recompile_limit",
    "eager_frame",
    "static_shapes_changing",
    "recompile",
    "graph_break",
    "dynamic_unneeded",
    "eager_implausibly_slow",
    "eager_python_overhead",
    "timing_inconclusive",
    "never_called",
)


def _static_shapes_changing(row: dict, cause: dict, cost: float) -> dict:
    at = row["compiled_at"]
    forced = row["options"].get("dynamic") is False
    how = (
        "is compiled for static shapes (`dynamic=False`)"
        if forced
        else "is compiled with automatic dynamic shapes (`dynamic=None`, the default: static at first, "
        "a dimension turns dynamic once it changes)"
    )
    return _finding(
        "static_shapes_changing",
        f"`{row['function']}` {how}, and its input shapes still cost recompiles "
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
        # forced static: torch.compile(dynamic=True) there; and the cause's own fixes (mark_dynamic)
        ([action("dynamic", **_code_of(row), **site(at))] if forced else []) + _cause_actions(cause),
    )


def _code_of(row: dict) -> dict:
    """The params naming a compiled row's code, as fxlens.fix.child matches it (name and file)."""
    return {"function": simple(row["function"]), "file": row["file"]}


def _cause_actions(cause: dict) -> list[dict]:
    """A recompile cause's fixes as data (fxlens.report.causefix), else its words, stated as code."""
    return list(cause.get("actions") or []) or [code_action(cause["fix"])]


def _cause_finding(rows: list[dict], cause: dict, secs: dict[str, float]) -> dict:
    """One recompile cause; a size change in a function compiled static reads as its own kind."""
    row = owner(rows, cause["file"], cause["function"], [])
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
        _cause_actions(cause),
    )


def _limit_finding(rows: list[dict], hit: dict) -> dict:
    row = owner(rows, hit["file"], hit["function"], [])
    # from the hit on, the frame runs with no compiled region: the profiled call's time outside
    # every compiled frame (when the replayed call is one of those that hit it)
    cost, measured = outside_cost(row)
    return _finding(
        "recompile_limit",
        f"`{hit['function']}` ({_loc(hit['file'], hit['line'])}) hit the recompile limit "
        f"({hit['limit_type']}={hit['limit']}): from then on it runs eagerly, silently; {measured}",
        hit["file"],
        hit["line"],
        "fix the recompile cause listed for this function; raising "
        "`torch._dynamo.config.recompile_limit` only hides it",
        cost,
        hit["function"],
        # the same switch `fxlens fix` tries for a limit hit: measured, it shows what the limit hid
        [config_action("recompile_limit", (hit.get("limit") or 8) * 8, "limit_hits")],
    )


def _recompile_findings(rows: list[dict], report: dict) -> list[dict]:
    secs = {m["compile_id"]: m["total_s"] or 0.0 for m in report["compile_times"]["per_compile"]}
    out = [_cause_finding(rows, cause, secs) for cause in report["recompile_causes"]]
    out += [_limit_finding(rows, hit) for hit in report["recompile_limit_hits"]]
    return out


def _capture_only(rows: list[dict]) -> list[dict]:
    """A backend that only captures (eager, aot_eager), said up front: no speed to gain from it."""
    out = []
    for row in rows:
        backend = row["options"].get("backend")
        if not capture_only(backend):
            continue
        at = row["compiled_at"]
        where = _loc(at["file"], at["line"])
        slower = row.get("verdict") == "slower"
        out.append(
            _finding(
                "capture_only_backend",
                f"`{row['function']}` is compiled at {where} with backend={backend!r}, which only captures "
                "graphs and runs them as written: it cannot make the function faster, so doctor claims no "
                "speedup for it" + ("; its capture overhead is measured below" if slower else ""),
                at["file"],
                at["line"],
                f'for speed, compile with the default backend (`backend="inductor"`) at {where}; keep '
                f"{backend!r} to debug what Dynamo captures (graph breaks, recompiles)",
                0.0,
                row["function"],
                [code_action(f'`backend="inductor"` at {where}')],
            )
        )
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
                    [action("compile_inside_ddp", **site(at))],
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
                    [action("dynamic_default", **_code_of(row), **site(at))],
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
        rows: per-function rows (fxlens.probe.stats.function_rows).
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
    raised = report.get("compile_failed")  # called, and its compile raised: not "never called"
    if raised and not failed:
        out.append(
            _finding(
                "compiled_run_failed", raised["message"], *_failed_place(report), raised["fix"], 0.0, None
            )
        )
        rows = [_called_once(r, raised) for r in rows]
    failures = {
        m["compile_id"]: m.get("fail_reason") or ""
        for m in (report.get("compile_times") or {}).get("per_compile") or []
        if m.get("fail_reason")
    }
    breaks = break_findings(rows, report["graph_breaks"], failures)
    breaks_in = breaks_per_owner(rows, report["graph_breaks"])
    # `graphs` absent: a report that cannot say (older sessions); present and empty: none captured
    graphs = len(report["graphs"]) if "graphs" in report else None
    ran_eagerly = graphs == 0 and not failed and any(r["calls"] for r in rows)
    if ran_eagerly:
        out.append(no_graph(rows))
    out += _capture_only(rows)
    out += timing_findings(rows, cuda, breaks_in, failed, load, ran_eagerly)
    out += _recompile_findings(rows, report)
    out += breaks
    out += eager_frame_findings(rows, report.get("eager_frames") or [], report["recompile_limit_hits"])
    out += _usage_findings(rows, graphs)
    return _ranked(out, ran_eagerly)


def _failed_place(report: dict) -> tuple[str, int | None]:
    first = (report.get("failures") or [{}])[0]
    return first.get("file") or report["source"].get("script"), first.get("line")


def _called_once(row: dict, raised: dict) -> dict:
    """A row of a function whose compile raised: the script did call it (the call raised, so the
    probe counted none); marked so no finding says it was never called."""
    if row["calls"] or not (
        raised["nothing_compiled"] or row["function"].split(".")[-1] in raised["functions"]
    ):
        return row
    return {**row, "compile_raised": True}


def _ranked(out: list[dict], ran_eagerly: bool) -> list[dict]:
    """PINNED kinds first, then by cost, ties in KINDS order, then by place."""
    rank = {k: i for i, k in enumerate(KINDS)}
    pinned = {k: i for i, k in enumerate(PINNED)}
    # a failed compiled run, then "no graph": they outrank any cost, nothing measured means much then;
    # the wrapper that caused "no graph" comes right after it
    if ran_eagerly:
        pinned["compiled_after_wrap"] = pinned["no_graph_captured"] + 0.5
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
