"""What a start with every cache hit still spends, by part, from torch's own timed events.

Each compile's `dynamo_timed` events (the log's `chromium_event` records, fxlens.trace.timedevents)
are split by their self seconds into the parts of a warm start; the parts of one compile sum to
its outermost events' inclusive seconds (torch's compile seconds for that frame).
"""

from __future__ import annotations

from pathlib import Path

from fxlens.trace.timedevents import timed_events

# in the order they are shown
PARTS = (
    "dynamo tracing",
    "guard building",
    "cache keys",
    "cache lookups and loading",
    "kernel loading",
    "autotuning",
    "compiling (not from a cache)",
    "other",
)


def part_of(name: str, stage: str) -> str:
    """The part one timed event's self seconds belong to (torch's event names, as of 2.13)."""
    low = name.lower()
    if name == "build_guards":
        return "guard building"
    if "autotun" in low or "benchmark" in low:
        return "autotuning"
    loading = name.startswith(("PyCodeCache.", "async_compile."))
    if loading or (name == "compile_file" and stage != "inductor"):
        # on a hit the cached module is imported and its C++/Triton kernels loaded (a C++ kernel
        # whose shared library is not cached is built here too: compile_file under the load)
        return "kernel loading"
    if low.endswith("_key") or name.startswith("CacheBase."):
        return "cache keys"  # hashing torch's and triton's sources for the cache key, once a process
    if "cache" in low or "bundler" in low:
        return "cache lookups and loading"
    if stage == "dynamo":
        return "dynamo tracing"
    if stage in ("inductor", "aot_autograd", "backward"):
        return "compiling (not from a cache)"
    return "other"


def warm_parts(log_dir: str | Path) -> dict:
    """`{total_s, parts: {part: s}, per_compile: [{compile_id, total_s, parts}]}` over the logs of
    one run (every `*.log` under LOG_DIR); parts with no seconds are left out."""
    per_compile, totals = [], dict.fromkeys(PARTS, 0.0)
    for log in sorted(Path(log_dir).glob("*.log")):
        for cid, events in timed_events(log).items():
            if cid in ("None", ""):
                continue  # events outside a compile (a worker's)
            parts = dict.fromkeys(PARTS, 0.0)
            for e in events:
                parts[part_of(e.name, e.stage)] += e.self_s
            for k, v in parts.items():
                totals[k] += v
            per_compile.append(
                {
                    "compile_id": cid,
                    "total_s": round(sum(parts.values()), 6),
                    "parts": {k: round(v, 6) for k, v in parts.items() if v > 0},
                }
            )
    return {
        "total_s": round(sum(totals.values()), 6),
        "parts": {k: round(v, 6) for k, v in totals.items() if v > 0},
        "per_compile": per_compile,
    }
