"""Per compile: where its time went, whether torch's caches hit, and its failures and restarts in
full -- tlparse's compile table, from torch's own `compilation_metrics` records.

torch logs one `compilation_metrics` record per compile attempt (a restart logs one for the attempt
that gave up, with `restart_reasons`) and one `bwd_compilation_metrics` for a compiled backward;
the model reads both into `CompileMetrics` (fxlens.trace.records), so nothing here reads the logs.
The report's one per-compile list is `compile_times.per_compile`.
"""

from __future__ import annotations

from dataclasses import asdict

from fxlens.report import coldstart
from fxlens.report.document import Code, Excerpt, Line, Section
from fxlens.report.failures import whole_text
from fxlens.report.ranks import rank_ranges, without_rank
from fxlens.trace.sanitize import clip

TEXT_ROWS = 8

# the per-compile time columns every format shows, after the rank and before cache and guards
TIME_COLUMNS = ("compile id", "function", "total s", "dynamo s", "backend s", "inductor s", "backward s")


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 6)


def _row(m) -> dict:
    """One compile attempt: torch's times (the frame's, Dynamo's, the backend's and its parts, the
    backward graph's), per-stage times, caches, and its restarts and failure whole."""
    total = (m.total_s or 0.0) + (m.backward_s or 0.0) if m.total_s is not None or m.backward_s else None
    dynamo = m.total_s - m.backend_s if m.total_s is not None and m.backend_s is not None else None
    return {
        "compile_id": m.compile_id,
        "rank": m.rank,
        "function": m.function,
        "file": m.file,  # where the frame is (a compile with no graph has no other location)
        "line": m.line,
        "co_name": m.co_name,
        "total_s": _round(total),
        "time_source": m.time_source,  # the field torch's total came from (fxlens.trace.compile_cost)
        "forward_s": m.total_s,
        "dynamo_s": _round(dynamo),
        "backend_s": m.backend_s,
        "inductor_s": m.inductor_s,
        "code_gen_s": m.code_gen_s,
        "backward_s": m.backward_s,
        "stages_s": dict(m.stages),
        "passes_s": dict(m.passes),  # pre/joint/post-grad passes, Triton, remote cache, gc (as timed)
        "guard_count": m.guard_count,
        "graph_node_count": m.graph_node_count,
        "cache": {name: {"hits": h, "misses": n} for name, h, n in m.cache},
        # each lookup from torch's cache artifacts: {cache, outcome, reason, saved_s, taken_s}
        "caches": [{k: v for k, v in asdict(c).items() if k != "line_no"} for c in m.caches],
        "restart_reasons": list(m.restart_reasons),
        "fail_type": m.fail_type,
        "fail_reason": m.fail_reason,  # whole, as torch logged it
        "fail_at": f"{m.fail_user_file}:{m.fail_user_line}" if m.fail_user_file else None,
    }


def compile_times(session) -> dict:
    """`{total_s, backward_s, per_compile}`: one row per compile attempt per rank, in the order each
    rank logged them (a compile's total is its frame's time plus its backward graph's compile,
    which torch records apart, in bwd_compilation_metrics)."""
    per = [_row(m) for m in session.metrics]
    for p in per:
        p["cache_outcomes"] = coldstart.cache_outcomes(p)
        p["recompile"] = coldstart.is_recompile(p["compile_id"])
    return {
        "total_s": round(sum(p["total_s"] or 0.0 for p in per), 4),
        "backward_s": round(sum(p["backward_s"] or 0.0 for p in per), 4),
        "per_compile": per,
        # where cold start goes (fxlens.report.coldstart): the slowest rank's frames, stages, recompiles
        "cold_start": coldstart.cold_start(per),
        "per_stage": coldstart.per_stage(per),
        "per_rank": coldstart.per_rank(per),
        "cache_bypasses": coldstart.bypass_reasons(per),
        "cache_divergence": coldstart.cache_divergence(per),
    }


def failures_and_restarts(rows: list[dict]) -> list[dict]:
    """Compiles that failed or restarted (`rows`: compile_times.per_compile), whole reasons kept; one
    entry per (compile, reason) with every rank it happened on."""
    merged: dict[tuple, dict] = {}
    for x in rows:
        events = [("restart", "restart", reason, None) for reason in x["restart_reasons"]]
        if x["fail_type"]:
            events.append(("failure", x["fail_type"], x["fail_reason"] or "", x["fail_at"]))
        for kind, typ, reason, at in events:
            key = (x["compile_id"], x["function"], kind, typ, without_rank(reason, x["rank"]))
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


def _same(x: str) -> str:
    return x


def restart_section(report: dict, limit: int | None = TEXT_ROWS, text=_same) -> list:
    """The restarts (the first LIMIT), each with its reason: the terminal its first lines, Markdown
    and HTML all of it, folded (the compile-time table has the stages and caches, the failures
    section the failures). TEXT shortens free text."""

    events = [e for e in report.get("failures_and_restarts") or [] if e["kind"] == "restart"]
    if not events:
        return []
    ranked = len(report.get("ranks") or []) > 1
    lines: list = []
    shown = events[:limit]
    for e in shown:
        ranks = f" on rank(s) {rank_ranges(e['ranks'], limit=6)}" if ranked else ""
        lines.append(Line([Code(e["compile_id"]), " ", Code(e["function"]), ranks]))
        reason = [ln for ln in e["reason"].strip().split("\n") if ln.strip()]
        more = (
            f"... {len(reason) - 6} more line(s) (see --json failures_and_restarts)"
            if len(reason) > 6
            else ""
        )
        summary = "the whole reason" + (f": {text(clip(reason[0], 160))}" if reason else "")
        lines.append(Excerpt(text(whole_text(e["reason"])), summary, reason[:6], more))
    if len(events) > len(shown):
        lines.append(Line(f"... {len(events) - len(shown)} more (see --json failures_and_restarts)"))
    return [Section("Restarts", lines, gloss="Dynamo analysed the frame again; whole reasons")]
