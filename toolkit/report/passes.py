"""Where the backend's seconds go, by pass: AOTAutograd's and inductor's timed events per compile
(torch's `chromium_event` records: `aot_trace_joint_graph`, `_recursive_joint_graph_passes`,
`pass.post_grad_passes.*`, `GraphLowering.run`, `Scheduler.codegen`, `async_compile.wait`, ...),
each with its self seconds (less the events nested in it) and the stage it ran in.

A trace without those records (an in-process budget capture) has no section.
"""

from __future__ import annotations

from fxlens.report.table import tabulate

from fxlens.trace.timedevents import timed_events

# the stages whose passes are listed (Dynamo's own seconds are by source line: fxlens.report.linetimes)
STAGES = ("aot_autograd", "inductor", "backward", "backend")
TOP = 12


def compile_passes(session) -> dict:
    """The report's `compile_passes`: per compile its heaviest passes, and the passes over all compiles."""
    metrics = {(m.rank, m.compile_id.split("#")[0]): m for m in session.metrics}
    per_compile, totals = [], {}
    for rank in session.ranks:
        for cid, events in timed_events(rank.log).items():
            mine = [e for e in events if e.stage in STAGES]
            if not mine:
                continue
            m = metrics.get((rank.rank, cid))
            stages: dict[str, float] = {}
            for e in mine:
                stages[e.stage] = stages.get(e.stage, 0.0) + e.self_s
                t = totals.setdefault((e.stage, e.name), [0.0, 0])
                t[0] += e.self_s
                t[1] += 1
            top = sorted(mine, key=lambda e: -e.self_s)[:TOP]
            per_compile.append(
                {
                    "compile_id": cid,
                    "rank": rank.rank,
                    "function": m.function if m else "",
                    "backend_s": m.backend_s if m else None,
                    "stages_s": {k: round(v, 6) for k, v in stages.items()},
                    "passes": [
                        {"name": e.name, "stage": e.stage, "self_s": e.self_s, "incl_s": e.incl_s}
                        for e in top
                    ],
                }
            )
    by_pass = sorted(
        ({"name": n, "stage": st, "self_s": round(s, 6), "count": c} for (st, n), (s, c) in totals.items()),
        key=lambda p: -p["self_s"],
    )
    total = round(sum(p["self_s"] for p in by_pass), 6)
    return {"total_s": total, "per_compile": per_compile, "by_pass": by_pass[:40]}


def pass_lines(report: dict, limit: int = 10) -> list[str]:
    """The text section: the heaviest passes over all compiles, with their stage and share."""
    sec = report.get("compile_passes") or {}
    passes = sec.get("by_pass") or []
    total = sec.get("total_s") or 0.0
    if not passes or total < 0.01:
        return []
    rows = [
        [p["stage"], p["name"], f"{p['self_s']:.2f}", f"{p['self_s'] / total:.0%}", p["count"]]
        for p in passes[:limit]
    ]
    n = len(sec["per_compile"])
    return [
        f"Where the backend's {total:.2f} s go, by pass (torch's timed events, self seconds, {n} compile(s)):",
        tabulate(
            rows,
            headers=["stage", "pass", "self s", "share", "runs"],
            tablefmt="simple",
            disable_numparse=True,
        ),
        "",
    ]


def pass_blocks(report: dict, limit: int = 15) -> list:
    """The Markdown / HTML section: the heaviest passes over all compiles."""
    from fxlens.report.document import Code, Heading, Table

    sec = report.get("compile_passes") or {}
    passes, total = sec.get("by_pass") or [], sec.get("total_s") or 0.0
    if not passes or total < 0.01:
        return []
    rows = [
        [p["stage"], Code(p["name"]), f"{p['self_s']:.3f}", f"{p['self_s'] / total:.0%}", str(p["count"])]
        for p in passes[:limit]
    ]
    return [
        Heading(3, f"The backend's {total:.2f} s by pass (torch's timed events)"),
        Table(["stage", "pass", "self s", "share", "runs"], rows),
    ]
