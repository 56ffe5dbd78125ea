"""Where a compiled call's time goes: in compiled graphs, or outside them, per Dynamo frame.

A graph break splits a compiled call into graphs with eager code between them: the instruction
that broke runs in Python, then Dynamo looks up and guards the resume function. What a break
costs is that time between the graphs, as a share of the call. torch's profiler sees it: Dynamo
wraps each compiled frame's run in a `Torch-Compiled Region: <compile id>` range (nested: a resume
function runs inside the frame that called it), and inductor wraps each graph call in
`## Call CompiledFxGraph <key> ##`. So, for each frame, its own time (its region less the regions
nested in it) less the graphs it called is the eager time that frame's break left; and the part
of the call in no region at all ran in frames torch gave up on (or never compiled).

Backends without a graph event (eager, aot_eager) run the graph as aten calls inside the same
region: there the split cannot be made (`graphs_seen` false), and no break is given a cost.
The profiler adds a few microseconds per op, more to eager segments (many ops) than to inductor's
graphs (one call each): a share read here errs towards the break.
"""

from __future__ import annotations

import re

# Dynamo's range for a compiled frame's run, and inductor's for one compiled graph call
_REGION = re.compile(r"^Torch-Compiled Region: (\d+/\d+)")
_GRAPH = re.compile(r"^## Call CompiledFxGraph")
# calls profiled (after the timing, so all of them are warm)
CALLS = 3


def _direct(children: list, parent) -> list:
    """The intervals in `children` inside `parent` and inside no other of them."""
    inside = [c for c in children if c is not parent and parent[0] <= c[0] and c[1] <= parent[1]]
    return [c for c in inside if not any(o is not c and o[0] <= c[0] and c[1] <= o[1] for o in inside)]


def split_times(events: list[tuple[str, float, float]], calls: list[tuple[float, float]]) -> dict:
    """Per-call milliseconds from profiler events `(name, start_us, end_us)` and each call's range.

    Returns `{call_ms, outside_regions_ms, graphs_seen, frames: {compile_id: {own_ms, graph_ms,
    eager_ms}}}`; every figure is a mean per call.
    """
    regions = [(s, e, m.group(1)) for n, s, e in events if (m := _REGION.match(n))]
    graphs = [(s, e, "graph") for n, s, e in events if _GRAPH.match(n)]
    n = max(len(calls), 1)
    frames: dict[str, dict] = {}
    top_ms = 0.0
    for call in calls:
        tops = _direct(regions, (call[0], call[1], "call"))
        top_ms += sum(e - s for s, e, _ in tops) / 1000
    for r in regions:
        nested = _direct(regions, r)
        own = (r[1] - r[0]) - sum(e - s for s, e, _ in nested)
        # graphs called by this frame itself, not by a frame nested in it
        mine = [g for g in _direct(graphs + regions, r) if g[2] == "graph"]
        graph = sum(e - s for s, e, _ in mine)
        f = frames.setdefault(r[2], {"own_ms": 0.0, "graph_ms": 0.0, "eager_ms": 0.0})
        f["own_ms"] += own / 1000 / n
        f["graph_ms"] += graph / 1000 / n
        f["eager_ms"] += max(own - graph, 0.0) / 1000 / n
    call_ms = sum(e - s for s, e in calls) / 1000 / n
    return {
        "call_ms": round(call_ms, 4),
        "outside_regions_ms": round(max(call_ms - top_ms / n, 0.0), 4),
        "graphs_seen": bool(graphs),
        "frames": {k: {kk: round(v, 4) for kk, v in f.items()} for k, f in frames.items()},
    }


def profile_call(compiled_fn, args: tuple, kwargs: dict) -> dict:
    """Profile CALLS calls of the compiled object and split their time (see `split_times`)."""
    import time

    import torch
    from torch.profiler import ProfilerActivity, profile

    calls = []
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(CALLS):
            # the profiler's clock is in microseconds since its own start: mark each call's range
            # with a range of our own, read back from the events
            with torch.profiler.record_function("fxlens doctor call"):
                compiled_fn(*args, **kwargs)
    t0 = time.perf_counter()
    events = [(e.name, e.time_range.start, e.time_range.end) for e in prof.events()]
    calls = [(s, e) for n, s, e in events if n == "fxlens doctor call"]
    out = split_times([ev for ev in events if ev[0] != "fxlens doctor call"], calls)
    out["read_s"] = round(time.perf_counter() - t0, 3)
    return out
