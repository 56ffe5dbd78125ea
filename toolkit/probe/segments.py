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
The profiler adds some microseconds to every op it records, far more to an eager segment (hundreds
of ops) than to an inductor graph (one call): measured on break_costs.py, 300 eager ops read 5.7 ms
profiled against 1.0 ms unprofiled. So the same calls are also timed without the profiler, the
difference is spread evenly over the events recorded, and each segment loses its events' part.
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


def _innermost(spans: list, t: float):
    """The shortest span holding time t (None: none does)."""
    inside = [s for s in spans if s[0] <= t < s[1]]
    return min(inside, key=lambda s: s[1] - s[0]) if inside else None


def _event_counts(events: list, regions: list, graphs: list) -> tuple[dict, int, int]:
    """Per frame, the profiler events recorded in its eager part; those outside every frame; all."""
    counts: dict[str, int] = {}
    outside = total = 0
    for name, s, _ in events:
        total += 1
        if _REGION.match(name) or _GRAPH.match(name):
            continue
        where = _innermost(regions + graphs, s)
        if where is None:
            outside += 1
        elif where[2] != "graph":
            counts[where[2]] = counts.get(where[2], 0) + 1
    return counts, outside, total


def split_times(
    events: list[tuple[str, float, float]], calls: list[tuple[float, float]], plain_ms: float | None = None
) -> dict:
    """Per-call milliseconds from profiler events `(name, start_us, end_us)` and each call's range.

    `plain_ms`, the same call timed without the profiler, corrects for the profiler's own cost
    per recorded event (see the module's docstring). Returns `{call_ms, outside_regions_ms,
    graphs_seen, per_event_us, frames: {compile_id: {own_ms, graph_ms, eager_ms}}}`; every figure
    is a mean per call.
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
    outside_ms = max(call_ms - top_ms / n, 0.0)
    counts, outside_events, total = _event_counts(events, regions, graphs)
    per_event = 0.0
    if plain_ms is not None and total:
        # the profiler's cost per recorded event, spread evenly: what profiling added to the call
        per_event = max(call_ms - plain_ms, 0.0) / (total / n)
        for cid, f in frames.items():
            f["eager_ms"] = max(f["eager_ms"] - per_event * counts.get(cid, 0) / n, 0.0)
        outside_ms = max(outside_ms - per_event * outside_events / n, 0.0)
        call_ms = plain_ms
    return {
        "call_ms": round(call_ms, 4),
        "outside_regions_ms": round(outside_ms, 4),
        "graphs_seen": bool(graphs),
        "per_event_us": round(per_event * 1000, 3),
        "frames": {k: {kk: round(v, 4) for kk, v in f.items()} for k, f in frames.items()},
    }


def profile_call(compiled_fn, args: tuple, kwargs: dict) -> dict:
    """Profile CALLS calls of the compiled object and split their time (see `split_times`)."""
    import time

    import torch
    from torch.profiler import ProfilerActivity, profile

    plain = []
    for _ in range(CALLS):
        t = time.perf_counter()
        compiled_fn(*args, **kwargs)
        plain.append((time.perf_counter() - t) * 1000)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(CALLS):
            # the profiler's clock is in microseconds since its own start: mark each call's range
            # with a range of our own, read back from the events
            with torch.profiler.record_function("fxlens doctor call"):
                compiled_fn(*args, **kwargs)
    t0 = time.perf_counter()
    events = [(e.name, e.time_range.start, e.time_range.end) for e in prof.events()]
    calls = [(s, e) for n, s, e in events if n == "fxlens doctor call"]
    plain.sort()
    out = split_times([ev for ev in events if ev[0] != "fxlens doctor call"], calls, plain[len(plain) // 2])
    out["read_s"] = round(time.perf_counter() - t0, 3)
    return out


def profile_replay(compiled_fn, args: tuple, kwargs: dict, call_state) -> dict:
    """`profile_call` in the state the script's call ran in (fxlens.probe.callstate); a failure is
    recorded as `{"error": ...}`: the timing stands without the split."""
    from fxlens.probe.callstate import restored

    try:
        with restored(call_state):
            return profile_call(compiled_fn, args, kwargs)
    except Exception as e:  # noqa: BLE001 - the split is a detail of the report, never its end
        return {"error": f"{type(e).__name__}: {str(e)[:200]}"}
