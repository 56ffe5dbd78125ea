"""How the report counts what torch compiled: one function, read by the report's own head line,
`fxlens diff` and the compile budgets (`fxlens.expect`, the pytest plugin), so a budget failure
and `fxlens report` of the session it wrote never give two numbers for one thing.

A graph break torch could not resume (it gave up on the frame: "Skipping the function and falling
back to eager") is not counted as a graph break: the report lists it once, under `eager_frames`.
"""

from __future__ import annotations

#: what is counted, in the order budgets and tables list it
COUNTED = ("graphs", "graph_breaks", "eager_frames", "recompiles", "kernels", "fallbacks")


def report_counts(report: dict) -> dict[str, int]:
    """Counts per kind of a report dict (`build_report`, or a `fxlens report --json` file).

    `graph_breaks`: one per compile that hit a break (the deduplicated sites' counts summed);
    `eager_frames`: frames torch gave up on after a break; `recompiles`: one per recompile;
    `kernels`: fxlens kernels generated; `fallbacks`: ops fxlens's backend ran as ATen calls.
    """
    return {
        "graphs": len(report["graphs"]),
        "graph_breaks": sum(b["count"] for b in report["graph_breaks"]),
        "eager_frames": len(report.get("eager_frames") or []),
        "recompiles": len(report["recompiles"]),
        "kernels": len(report.get("kernels") or []),
        "fallbacks": sum(f["count"] for f in report.get("fallbacks") or []),
    }
