"""A compile's `compilation_metrics` record read into CompileMetrics: torch's per-stage times, its
backward graph's compile, cache counters, restarts and failure (times through fxlens.trace.compile_cost,
which reads every field torch writes)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from fxlens.trace import compile_cost
from fxlens.trace.records import CompileMetrics

if TYPE_CHECKING:
    from fxlens.trace.reader import Record

_CACHES = ("inductor_fx_local", "inductor_fx_remote", "aotautograd_local", "aotautograd_remote")
# (stage, compilation_metrics key in microseconds): the stages tlparse shows, in pipeline order
_STAGES = (
    ("dynamo", "dynamo_cumulative_compile_time_us"),
    ("aot_autograd", "aot_autograd_cumulative_compile_time_us"),
    ("inductor", "inductor_cumulative_compile_time_us"),
    ("code_gen", "inductor_code_gen_cumulative_compile_time_us"),
    ("triton", "triton_compile_time_us"),
)

if TYPE_CHECKING:
    from fxlens.trace.reader import Record


def _stages(m: dict, bwd: dict) -> tuple[tuple[str, float], ...]:
    """torch's per-stage times of a compile, seconds, and its backward graph's compile."""
    out = [(name, round(v * 1e-6, 4)) for name, key in _STAGES if (v := _float(m.get(key)))]
    if v := _float(bwd.get("backward_cumulative_compile_time_us")):
        out.append(("backward", round(v * 1e-6, 4)))
    return tuple(out)


def metrics_record(rec: Record, cid: str, where, backward: dict[str, dict]) -> CompileMetrics:
    """One compilation_metrics record as CompileMetrics: `cid` its compile's key (occurrence
    included), `where(cid)` -> (function, file, line, co_name), `backward` the bwd records by key."""
    m = rec.meta["compilation_metrics"] or {}
    fn, file, line, co = where(cid)
    bwd = backward.get(cid) or {}
    cache = tuple(
        (name, int(m.get(f"{name}_cache_hit_count") or 0), int(m.get(f"{name}_cache_miss_count") or 0))
        for name in _CACHES
        if m.get(f"{name}_cache_hit_count") or m.get(f"{name}_cache_miss_count")
    )
    nodes = m.get("graph_node_count")
    t = compile_cost.frame_times(m)  # whole-frame time, else torch's cumulative per-stage fields
    return CompileMetrics(
        cid,
        rec.rank,
        fn,
        co or str(m.get("co_name") or ""),
        file,
        line,
        t["total_s"],
        t["backend_s"],
        m.get("guard_count"),
        m.get("fail_type"),
        m.get("fail_reason"),
        int(nodes) if isinstance(nodes, int) else None,
        inductor_s=t["inductor_s"],
        code_gen_s=t["code_gen_s"],
        time_source=t["time_source"],
        passes=t["passes"],
        backward_s=_backward_s(bwd),
        dynamo_before_restart_s=_float(m.get("dynamo_time_before_restart_s")) or None,
        cache=cache,
        restart_reasons=tuple(str(r) for r in (m.get("restart_reasons") or []) if r),
        fail_user_file=str(m.get("fail_user_frame_filename") or ""),
        fail_user_line=int(m.get("fail_user_frame_lineno") or 0),
        code_file=str(m.get("co_filename") or ""),
        code_line=int(m.get("co_firstlineno") or 0),
        stages=_stages(m, bwd),
        triton_compile_us=_int(m.get("triton_compile_time_us")),
        triton_kernels_us=_kernel_times(m.get("triton_kernel_compile_times_us")),
    )


def _int(v) -> int | None:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _kernel_times(raw) -> tuple[tuple[str, int], ...]:
    """torch writes the per-kernel times as a JSON string of [name, us] pairs."""
    try:
        pairs = json.loads(raw) if isinstance(raw, str) else raw or []
        return tuple((str(n), int(us)) for n, us in pairs)
    except (ValueError, TypeError):
        return ()


def _backward_s(bwd: dict) -> float | None:
    """A backward graph's compile time: torch records it apart, with inductor's time only."""
    if not bwd:
        return None
    for key in ("entire_frame_compile_time_s", "inductor_compile_time_s", "backend_compile_time_s"):
        if (v := _float(bwd.get(key))) is not None:
            return v
    return None


def _float(v) -> float | None:
    try:
        return float(v) if v is not None else None
    except (TypeError, ValueError):
        return None
