"""Per compile: where its time went, whether torch's caches hit, and its failures and restarts in
full -- tlparse's compile table, from torch's own `compilation_metrics` records.

torch logs one `compilation_metrics` record per compile attempt (a restart logs one for the attempt
that gave up, with `restart_reasons`) and one `bwd_compilation_metrics` for a compiled backward.
The model keeps those records in memory (their config snapshots elided), so nothing here reads the
logs again.
"""

from __future__ import annotations

# (column, compilation_metrics key, scale to seconds) -- the stages tlparse shows, in pipeline order
_STAGES = (
    ("dynamo", "dynamo_cumulative_compile_time_us", 1e-6),
    ("aot_autograd", "aot_autograd_cumulative_compile_time_us", 1e-6),
    ("inductor", "inductor_cumulative_compile_time_us", 1e-6),
    ("code_gen", "inductor_code_gen_cumulative_compile_time_us", 1e-6),
    ("triton", "triton_compile_time_us", 1e-6),
)
# (cache, hit-count key, miss-count key): torch's local and remote caches of compiled graphs
_CACHES = (
    ("fx_graph", "inductor_fx_local_cache_hit_count", "inductor_fx_local_cache_miss_count"),
    ("fx_graph_remote", "inductor_fx_remote_cache_hit_count", "inductor_fx_remote_cache_miss_count"),
    ("aot_autograd", "aotautograd_local_cache_hit_count", "aotautograd_local_cache_miss_count"),
    ("aot_autograd_remote", "aotautograd_remote_cache_hit_count", "aotautograd_remote_cache_miss_count"),
)
TEXT_ROWS = 8


def _num(v) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def cache_outcome(m: dict) -> dict[str, str]:
    """{cache: "hit" | "miss" | "hit 2, miss 1"} for the caches this compile consulted."""
    out = {}
    for name, hit_key, miss_key in _CACHES:
        hit, miss = int(m.get(hit_key) or 0), int(m.get(miss_key) or 0)
        if hit or miss:
            out[name] = "hit" if not miss else "miss" if not hit else f"hit {hit}, miss {miss}"
    return out


def _row(rank, function: str, m: dict, bwd: dict | None) -> dict:
    stages = {name: round(v * scale, 4) for name, key, scale in _STAGES if (v := _num(m.get(key)))}
    if bwd and (v := _num(bwd.get("backward_cumulative_compile_time_us"))):
        stages["backward"] = round(v * 1e-6, 4)
    file, line = m.get("fail_user_frame_filename"), m.get("fail_user_frame_lineno")
    return {
        "compile_id": str(m.get("compile_id") or "?"),
        "rank": rank,
        "function": function,
        "total_s": _num(m.get("entire_frame_compile_time_s")),
        "stages_s": stages,
        "cache": cache_outcome(m),
        "restart_reasons": [str(r) for r in m.get("restart_reasons") or []],
        "fail_type": m.get("fail_type"),
        "fail_reason": m.get("fail_reason"),  # whole, as torch logged it
        "fail_at": f"{file}:{line}" if file else None,
    }


def compile_rows(session) -> list[dict]:
    """One row per compile attempt per rank, in the order each rank logged them."""
    rows = []
    for r in session.ranks:
        names = {m.compile_id: m.function for m in r.metrics}
        for cid, recs in r.by_compile.items():
            bwd = next(
                (x.meta.get("bwd_compilation_metrics") for x in recs if x.kind == "bwd_compilation_metrics"),
                None,
            )
            for rec in recs:
                if rec.kind != "compilation_metrics":
                    continue
                m = rec.meta.get("compilation_metrics") or {}
                if isinstance(m, dict):
                    rows.append(
                        _row(r.rank, names.get(str(m.get("compile_id")), names.get(cid, "?")), m, bwd)
                    )
    return rows


def failures_and_restarts(rows: list[dict]) -> list[dict]:
    """Compiles that failed or restarted, whole reasons kept; one entry per (compile, reason) with
    every rank it happened on."""
    merged: dict[tuple, dict] = {}
    for x in rows:
        events = [("restart", "restart", reason, None) for reason in x["restart_reasons"]]
        if x["fail_type"]:
            events.append(("failure", x["fail_type"], x["fail_reason"] or "", x["fail_at"]))
        for kind, typ, reason, at in events:
            key = (x["compile_id"], x["function"], kind, typ, reason)
            e = merged.setdefault(
                key,
                {
                    "compile_id": x["compile_id"],
                    "function": x["function"],
                    "kind": kind,
                    "type": typ,
                    "reason": reason,
                    "at": at,
                    "ranks": [],
                },
            )
            e["ranks"].append(x["rank"])
    return list(merged.values())


def compile_lines(report: dict) -> list[str]:
    """Text: the restarts with their whole reasons (the compile-time table has the stages and caches,
    the failures section the failures)."""
    from fxlens.report.ranks import rank_ranges

    events = [e for e in report.get("failures_and_restarts") or [] if e["kind"] == "restart"]
    if not events:
        return []
    out = ["Restarts (Dynamo analysed the frame again; whole reasons):"]
    for e in events[:TEXT_ROWS]:
        ranks = f" on rank(s) {rank_ranges(e['ranks'], limit=6)}" if len(report.get("ranks") or []) > 1 else ""
        out.append(f"  {e['compile_id']} {e['function']}{ranks}")
        reason = [ln for ln in e["reason"].strip().split("\n") if ln.strip()]
        out += [f"    {ln}" for ln in reason[:6]]
        if len(reason) > 6:
            out.append(f"    ... {len(reason) - 6} more line(s) (see --json failures_and_restarts)")
    if len(events) > TEXT_ROWS:
        out.append(f"  ... {len(events) - TEXT_ROWS} more (see --json failures_and_restarts)")
    out.append("")
    return out
