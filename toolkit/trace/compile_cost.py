"""What a compile cost and what torch's caches did for it, from every field torch writes.

Record kinds this module owns (the model calls it; the per-record-kind parser table can list them):
- `compilation_metrics` time fields: the whole-frame `entire_frame_compile_time_s`, else the cumulative
  per-stage `*_cumulative_compile_time_us` (tlparse's simple.log has only those), else `duration_us`,
  else `end_time_us - start_time_us` (AOTInductor's records, which name no compile id);
- `chromium_event` durations (`dynamo_timed` B/E pairs: `entire_frame_compile`, `backend_compile`,
  `inductor_compile`, `code_gen`, `compile_fx_aot`), read only for a compile whose metrics hold no
  stage time: the reader skips these records, so this is a second, rare pass over that one log;
- `artifact:fx_graph_cache_{hit,miss,bypass}` and `artifact:aotautograd_cache_{hit,miss,bypass}`
  (`autograd_cache_*` in older releases): each compile's cache outcome, torch's bypass reason, and the
  time a hit saved or a miss took.

Pure Python, no torch import; records in, small frozen dataclasses out.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

# artifact name -> (cache, outcome)
CACHE_ARTIFACTS = {
    f"artifact:{prefix}_cache_{outcome}": (cache, outcome)
    for prefix, cache in (
        ("fx_graph", "fx_graph"),
        ("aotautograd", "aotautograd"),
        ("autograd", "aotautograd"),
    )
    for outcome in ("hit", "miss", "bypass")
}

# (field, factor to seconds), first present wins: torch's own fields, in the order they are exact
_TOTAL = (
    ("entire_frame_compile_time_s", 1.0),
    ("dynamo_cumulative_compile_time_us", 1e-6),
    ("duration_us", 1e-6),
)
_BACKEND = (("backend_compile_time_s", 1.0), ("aot_autograd_cumulative_compile_time_us", 1e-6))
_INDUCTOR = (("inductor_compile_time_s", 1.0), ("inductor_cumulative_compile_time_us", 1e-6))
_CODE_GEN = (("code_gen_time_s", 1.0), ("inductor_code_gen_cumulative_compile_time_us", 1e-6))

# chromium (dynamo_timed) event name -> (the CompileMetrics field it stands in for, its stage name as
# the cumulative fields name it, fxlens.trace.model._STAGES)
_EVENTS = {
    "entire_frame_compile": ("total_s", "dynamo"),
    "compile_fx_aot": ("total_s", "aot_inductor"),  # AOTInductor: the whole export-time compile
    "backend_compile": ("backend_s", "aot_autograd"),
    "inductor_compile": ("inductor_s", "inductor"),
    "code_gen": ("code_gen_s", "code_gen"),
}


@dataclass(frozen=True)
class CacheEvent:
    """One cache lookup of one compile, as torch's cache artifact logged it."""

    cache: str  # "fx_graph" (inductor's FX graph cache) or "aotautograd"
    outcome: str  # "hit", "miss" or "bypass"
    reason: str = ""  # torch's bypass reason, whole
    saved_s: float | None = None  # what a hit saved (torch's time_saved_ns / time_saved_ms)
    taken_s: float | None = None  # what a miss took to compile (time_taken_ns)
    line_no: int = 0  # where it was logged (orders it among the rank's compiles)


# inductor's passes and other timed parts torch records beside the stages (microseconds), by name
PASSES = (
    ("pre_grad_passes", "pre_grad_pass_time_us"),
    ("joint_graph_passes", "joint_graph_pass_time_us"),
    ("post_grad_passes", "post_grad_pass_time_us"),
    ("triton_compile", "triton_compile_time_us"),
    ("remote_fx_graph_cache_get", "remote_fx_graph_cache_get_time_us"),
    ("remote_fx_graph_cache_put", "remote_fx_graph_cache_put_time_us"),
    ("distributed_ephemeral_timeout", "distributed_ephemeral_timeout_us"),
    ("gc", "gc_time_us"),
    ("structured_logging_overhead", "structured_logging_overhead_us"),
)


def _first(m: dict, fields: tuple) -> tuple[float | None, str]:
    for key, factor in fields:
        v = m.get(key)
        if isinstance(v, int | float) and not isinstance(v, bool):
            return float(v) * factor, key
    return None, ""


def frame_times(m: dict) -> dict:
    """{total_s, backend_s, inductor_s, code_gen_s, time_source, passes} of a compilation_metrics
    record, each from the first field torch wrote; `time_source` names the total's field, `passes`
    is ((name, seconds), ...) of the PASSES torch timed."""
    total, source = _first(m, _TOTAL)
    if total is None:
        start, end = m.get("start_time_us"), m.get("end_time_us")
        if isinstance(start, int | float) and isinstance(end, int | float) and end > start:
            total, source = (end - start) * 1e-6, "end_time_us - start_time_us"
    return {
        "total_s": None if total is None else round(total, 6),
        "backend_s": _round(_first(m, _BACKEND)[0]),
        "inductor_s": _round(_first(m, _INDUCTOR)[0]),
        "code_gen_s": _round(_first(m, _CODE_GEN)[0]),
        "time_source": source,
        "passes": tuple(
            (name, round(v * 1e-6, 6))
            for name, key in PASSES
            if isinstance(v := m.get(key), int | float) and not isinstance(v, bool) and v
        ),
    }


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 6)


def _num(v) -> float | None:
    try:
        return float(v) if v not in (None, "None", "") else None
    except (TypeError, ValueError):
        return None


def cache_event(kind: str, payload: dict, line_no: int) -> CacheEvent:
    """A cache artifact's record kind and JSON payload as a CacheEvent."""
    cache, outcome = CACHE_ARTIFACTS[kind]
    saved = _num(payload.get("time_saved_ns"))
    if saved is not None:
        saved *= 1e-9
    elif (ms := _num(payload.get("time_saved_ms"))) is not None:  # AOTAutograd's hit says ms
        saved = ms * 1e-3
    taken = _num(payload.get("time_taken_ns"))
    return CacheEvent(
        cache,
        outcome,
        str(payload.get("cache_bypass_reason") or "").strip(),
        None if saved is None else round(saved, 6),
        None if taken is None else round(taken * 1e-9, 6),
        line_no,
    )


def attach(model, path: str | Path) -> None:
    """Give each of the rank model's CompileMetrics its cache events and, where its metrics hold no
    time at all, the chromium events' durations. The hook the model calls once its metrics are read.

    A compile id can be compiled more than once in one log (a test that resets Dynamo); a cache
    artifact belongs to the first compilation_metrics record of its id logged after it."""
    metric_lines = _metric_lines(model)
    events: dict[int, list[CacheEvent]] = {}
    for key, recs in model.by_compile.items():
        lines = metric_lines.get(key, [])
        for rec in recs:
            if rec.kind not in CACHE_ARTIFACTS:
                continue
            payload = rec.payload_json()
            ev = cache_event(rec.kind, payload if isinstance(payload, dict) else {}, rec.line_no)
            owner = next((i for ln, i in lines if ln > rec.line_no), lines[-1][1] if lines else None)
            if owner is not None:
                events.setdefault(owner, []).append(ev)
    # a second pass over the log only for a compile torch timed no stage of (AOTInductor's record has
    # only its start and end): one failed compile in a 100 MB log must not cost a re-read for nothing
    need_events = [
        i
        for i, m in enumerate(model.metrics)
        if not m.stages and (m.total_s is None or m.time_source == "end_time_us - start_time_us")
    ]
    durations = chromium_durations(path) if need_events else {}
    for i, m in enumerate(model.metrics):
        extra: dict = {}
        if i in events:
            extra["caches"] = tuple(sorted(events[i], key=lambda e: e.line_no))
        if i in need_events:
            # chromium events name the id torch logged: no occurrence suffix (`0/0#2`), "None" for none
            raw = m.compile_id.split("#")[0]
            found = durations.get(raw if raw not in ("?", "-") else "None") or {}
            fields = {_EVENTS[n][0]: v for n, v in found.items()}
            extra.update({f: v for f, v in fields.items() if getattr(m, f) is None})
            if m.total_s is None and "total_s" in fields:
                extra["time_source"] = "chromium_event"
            if found and not m.stages:
                extra["stages"] = tuple((_EVENTS[n][1], v) for n, v in found.items())
        if extra:
            model.metrics[i] = replace(m, **extra)


def _metric_lines(model) -> dict[str, list[tuple[int, int]]]:
    """compile id -> [(line of its compilation_metrics record, index in model.metrics)], in log order."""
    out: dict[str, list[tuple[int, int]]] = {}
    by_key = {
        key: sorted(r.line_no for r in rs if r.kind == "compilation_metrics")
        for key, rs in model.by_compile.items()
    }
    seen: dict[str, int] = {}
    for i, m in enumerate(model.metrics):
        lines = by_key.get(m.compile_id, [])
        n = seen.get(m.compile_id, 0)
        seen[m.compile_id] = n + 1
        if n < len(lines):
            out.setdefault(m.compile_id, []).append((lines[n], i))
    return out


def chromium_durations(path: str | Path) -> dict[str, dict[str, float]]:
    """compile id ("0/0", or "None" where torch named none) -> {event name: seconds} from the log's
    chromium B/E event pairs (summed when a phase ran more than once), in the order they ended."""
    from fxlens.trace.timedevents import chromium_events

    out: dict[str, dict[str, float]] = {}
    open_at: dict[tuple[str, str], list[float]] = {}
    try:
        for e in chromium_events(path):
            _chromium_event(e, open_at, out)
    except OSError:
        return {}
    return out


def _chromium_event(e: dict, open_at: dict, out: dict) -> None:
    if e.get("name") not in _EVENTS:
        return
    cid = str((e.get("args") or {}).get("compile_id"))
    key = (cid, e["name"])
    ts = _num(e.get("ts"))
    if ts is None:
        return
    if e.get("ph") == "B":
        open_at.setdefault(key, []).append(ts)
    elif e.get("ph") == "E" and open_at.get(key):
        start = open_at[key].pop()
        per = out.setdefault(cid, {})
        per[e["name"]] = round(per.get(e["name"], 0.0) + (ts - start) * 1e-6, 6)
