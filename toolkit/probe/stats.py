"""`fxlens doctor`'s numbers: per compiled function, eager vs compiled, from the probe's events.

Pure Python over the `doctor_probe` events the child processes wrote (see fxlens.probe.hook);
no torch import. Steady state comes from the compiled child's interleaved measurement when it made
one (fxlens.probe.interleave), else from the script's own calls after the first that did not
compile; each speedup carries its interval (fxlens.probe.interval).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from fxlens.backend.stages import capture_only
from fxlens.probe.interval import clustered_interval, unpaired_interval, with_process_spread
from fxlens.report.speedups import verdict
from fxlens.trace.session import Session


@dataclass(frozen=True)
class RunStats:
    """One child run (one rank of one round) as the probe saw it."""

    mode: str  # eager / compiled
    rank: int | None
    script_s: float
    rss_bytes: int | None
    cuda_bytes: int | None
    records: tuple  # the probe's record dicts


def probe_runs(session: Session) -> list[RunStats]:
    """Every `doctor_probe` event of a session, one per process."""
    out = []
    for ev in session.events:
        if ev.get("event") != "doctor_probe":
            continue
        mem = ev.get("memory") or {}
        out.append(
            RunStats(
                mode=str(ev.get("mode")),
                rank=ev.get("rank"),
                script_s=float(ev.get("script_s") or 0.0),
                rss_bytes=mem.get("rss_bytes"),
                cuda_bytes=mem.get("cuda_bytes"),
                records=tuple(ev.get("records") or ()),
            )
        )
    return sorted(out, key=lambda r: (r.rank is None, r.rank or 0))


def record_key(rec: dict) -> tuple:
    """Matches one compiled object across the eager and compiled runs: where it was compiled."""
    return (rec.get("at_file"), rec.get("at_line"), rec.get("at_ordinal"), rec.get("name"))


def warm_times(rec: dict) -> list[float]:
    """Per-call times once warm: calls after the first that did not compile.

    The first call is left out even when it did not compile (eager too: first-touch allocation,
    lazy module init); with a single call, that call is all there is.
    """
    times = rec.get("times_ms") or []
    compiles = rec.get("compiles") or [0] * len(times)
    warm = [t for i, (t, c) in enumerate(zip(times, compiles, strict=False)) if i > 0 and not c]
    if not warm:
        warm = [t for t, c in zip(times, compiles, strict=False) if not c]
    return warm


def steady_ms(rec: dict) -> float | None:
    """Median time per call once warm (see warm_times)."""
    warm = warm_times(rec)
    return statistics.median(warm) if warm else None


def compile_seconds(rec: dict, steady: float | None) -> float:
    """Compile time charged to an object: the excess of each compiling call over a steady call.

    That is what the user waits for (Dynamo, the backend, first-run autotuning and allocation),
    plus compiles that ran right after a call returned (AOTAutograd's lazy backward).
    """
    times = rec.get("times_ms") or []
    compiles = rec.get("compiles") or [0] * len(times)
    base = steady or 0.0
    excess = sum(max(t - base, 0.0) for t, c in zip(times, compiles, strict=False) if c)
    return (excess + float(rec.get("outside_compile_ms") or 0.0)) / 1000


def _base_ms(rec: dict, steady: float | None) -> float | None:
    """A steady compiled call to charge compile time against: the script's own warm calls, else
    (every call compiled: a script that calls once) the interleaved measurement's median."""
    if steady is not None:
        return steady
    bench = rec.get("bench") or {}
    return (bench.get("compiled") or {}).get("median_ms")


def recompiling_calls(rec: dict) -> int:
    """Calls after the first that compiled (a recompile, or a new frame after a graph break)."""
    compiles = rec.get("compiles") or []
    return sum(1 for c in compiles[1:] if c)


def _median(values: list) -> float | None:
    vals = [v for v in values if v is not None]
    return statistics.median(vals) if vals else None


def _r(x: float | None, nd: int = 4) -> float | None:
    return None if x is None else round(x, nd)


def break_even(compile_s: float | None, eager_ms: float | None, compiled_ms: float | None) -> int | None:
    """Calls after which compiling has paid for itself; None when it never does."""
    if compile_s is None or eager_ms is None or compiled_ms is None:
        return None
    saved = eager_ms - compiled_ms
    if saved <= 0:
        return None
    return max(1, math.ceil(compile_s * 1000 / saved))


def _per_object(eager_rounds: list[list[RunStats]], compiled_rounds: list[list[RunStats]]) -> dict:
    """Each compiled object's probe record (rank 0's) and its figures per round, eager and compiled."""
    per_key: dict[tuple, dict] = {}
    for mode, rounds in (("eager", eager_rounds), ("compiled", compiled_rounds)):
        for runs in rounds:
            run = runs[0] if runs else None  # rank 0's view
            if run is None:
                continue
            for rec in run.records:
                row = per_key.setdefault(record_key(rec), {"rec": rec, "eager": [], "compiled": []})
                if mode == "compiled":
                    row["rec"] = rec  # the compiled run's view wins (options, wrapped_in, signatures)
                steady = steady_ms(rec)
                row[mode].append(
                    {
                        "ms": steady,
                        "warm": warm_times(rec),
                        "bench": rec.get("bench") if mode == "compiled" else None,
                        "calls": rec.get("calls", 0),
                        "compile_s": compile_seconds(rec, _base_ms(rec, steady))
                        if mode == "compiled"
                        else None,
                        "recompiling_calls": recompiling_calls(rec),
                        "traced_compile_s": sum(rec.get("compile_ms") or []) / 1000
                        + float(rec.get("outside_compile_ms") or 0.0) / 1000,
                    }
                )
    return per_key


def _pooled(benches: list[dict], key: str) -> tuple[list[tuple], tuple | None, tuple | None]:
    """Every round's `key` pairs pooled, and their interval: the rounds' pairs are several
    processes', resampled as such (fxlens.probe.interval.clustered_interval); the interval
    includes the spread between fresh processes that no process's own pairs show, the third item
    is the pairs' own interval without it."""
    groups = [[tuple(p) for p in b.get(key) or ()] for b in benches]
    pooled = [p for g in groups for p in g]
    own = clustered_interval(groups)
    return pooled, with_process_spread(own, _ratio(pooled), len(groups)), own


def _steady(row: dict) -> tuple[float | None, float | None, dict]:
    """Steady-state eager and compiled ms per call, and how they were measured.

    From the interleaved measurement when the compiled runs made one (its pairs pooled over
    rounds); else from the script's own calls, eager and compiled runs apart (distributed runs,
    `--budget 0`). Either way the interval needs MIN_PAIRS samples a side, or there is none.
    """
    benches = [r["bench"] for r in row["compiled"] if r.get("bench") and r["bench"].get("pairs")]
    if benches:
        pairs, iv, own = _pooled(benches, "pairs")
        cpu_pairs, cpu_iv, _ = _pooled(benches, "cpu_pairs")
        if len(cpu_pairs) != len(pairs):
            cpu_iv = None
        timing = {
            "method": "interleaved",
            # the interval's scope: one process's noise, or the spread between processes too
            "processes": len(benches),
            **{k: benches[0].get(k) for k in ("stopped", "looks", "max_s", "min_span_s", "threads")},
            "run_length": max(b.get("run_length") or 1 for b in benches),
            "seconds": round(sum(b.get("seconds") or 0.0 for b in benches), 3),
            "pairs_seconds": round(
                sum(b.get("pairs_seconds") or b.get("seconds") or 0.0 for b in benches), 3
            ),
            "cpu_share": {m: benches[0][m].get("cpu_share") for m in ("eager", "compiled")},
            "timer": {
                m: {k: benches[0][m][k] for k in ("iqr_ms", "significant_figures")}
                for m in ("eager", "compiled")
            },
            **{k: benches[0].get(k) for k in ("work", "load", "timed_on", "replayed_in", "segments")},
            # the fastest block of each mode: what a call costs when nothing stalls it
            "fastest_ms": {"eager": min(p[0] for p in pairs), "compiled": min(p[1] for p in pairs)},
            "compiles_during": sum(b.get("compiles_during") or 0 for b in benches),
            "cpu_speedup": _r(_ratio(cpu_pairs), 3),
            "cpu_speedup_interval": [_r(cpu_iv[0], 3), _r(cpu_iv[1], 3)] if cpu_iv else None,
        }
        e = statistics.median(p[0] for p in pairs)
        c = statistics.median(p[1] for p in pairs)
        # the pairs' own interval, before the spread between processes is added
        timing["pairs_interval"] = _rounded(own)
        return e, c, {**timing, "interval": iv, "samples": {"eager": len(pairs), "compiled": len(pairs)}}
    eager = [t for r in row["eager"] for t in r["warm"]]
    compiled = [t for r in row["compiled"] for t in r["warm"]]
    skipped = next(
        (r["bench"]["skipped"] for r in row["compiled"] if r.get("bench") and "skipped" in r["bench"]), None
    )
    timing = {
        "method": "separate_runs",
        "interval": unpaired_interval(eager, compiled),
        "samples": {"eager": len(eager), "compiled": len(compiled)},
        "why": skipped or "no interleaved measurement (--budget 0)",
    }
    return (
        statistics.median(eager) if eager else None,
        statistics.median(compiled) if compiled else None,
        timing,
    )


def judge(interval, cpu_interval=None) -> tuple[str, str | None]:
    """(verdict, why it was withheld): the wall-time interval decides, unless process CPU time
    firmly says the opposite; then the wall times measured the machine's load (or a wait CPU time
    cannot see), not the compiler, and there is no verdict."""
    said, cpu_said = verdict(interval), verdict(cpu_interval)
    if said != "inconclusive" and cpu_said not in ("inconclusive", said):
        return "inconclusive", f"wall time says {said}, process CPU time says {cpu_said}"
    return said, None


def _rounded(iv) -> list | None:
    return [_r(iv[0], 3), _r(iv[1], 3)] if iv else None


def _ratio(pairs: list) -> float | None:
    if not pairs:
        return None
    c = statistics.median(p[1] for p in pairs)
    return statistics.median(p[0] for p in pairs) / c if c > 0 else None


def _function_row(row: dict) -> dict:
    """One compiled object's row: steady state, its interval and verdict, compile time over rounds."""
    rec = row["rec"]
    eager_ms, compiled_ms, timing = _steady(row)
    per_round = [r["compile_s"] for r in row["compiled"] if r["compile_s"] is not None]
    compile_s = _median(per_round)
    calls = (row["compiled"] or row["eager"] or [{"calls": 0}])[0]["calls"]
    # from the reported (rounded) times, so the JSON keeps speedup == eager_ms / compiled_ms exactly
    eager_ms, compiled_ms = _r(eager_ms), _r(compiled_ms)
    speedup = eager_ms / compiled_ms if eager_ms is not None and compiled_ms else None
    iv = timing.pop("interval")
    samples = timing.pop("samples")
    if iv and speedup is not None:
        # the interval is the pairs' (median of per-pair ratios, bootstrapped); the speedup is the
        # ratio of the reported, rounded medians: with a narrow interval the two can differ in the
        # third digit. Widen (never narrow) it to hold the speedup, before the verdict reads it
        iv = (min(iv[0], speedup), max(iv[1], speedup))
    if not calls and timing.get("method") == "separate_runs":
        timing["why"] = "never called in this run"
    said, disagreement = judge(iv, timing.get("cpu_speedup_interval"))
    if disagreement:
        timing["disagreement"] = disagreement
    if capture_only((rec.get("options") or {}).get("backend")):
        # eager/aot_eager compile nothing for speed: a "faster" reading is the machine or Python
        # overhead, never the backend's doing; a slower one is their real capture overhead
        timing["capture_only"] = True
        if said == "faster":
            said = "inconclusive"
    sigs = rec.get("signatures") or {}
    return {
        "function": rec.get("name"),
        "file": rec.get("def_file"),
        "line": rec.get("def_line"),
        "calls": calls,
        "eager_ms": _r(eager_ms),
        "compiled_ms": _r(compiled_ms),
        "compile_s": _r(compile_s, 3),
        # one compile per round: its spread over --rounds is the only interval compile time has
        "compile_s_range": [_r(min(per_round), 3), _r(max(per_round), 3)] if len(per_round) > 1 else None,
        "speedup": _r(speedup, 3),
        "break_even_calls": break_even(compile_s, eager_ms, compiled_ms),
        "speedup_interval": [_r(iv[0], 3), _r(iv[1], 3)] if iv else None,
        "samples": samples,
        "verdict": said,
        "timing": timing,
        "compiled_at": {"file": rec.get("at_file"), "line": rec.get("at_line")},
        "kind": rec.get("kind"),
        "options": rec.get("options") or {},
        "wrapped_in": rec.get("wrapped_in"),
        "recompiling_calls": _median([r["recompiling_calls"] for r in row["compiled"]]) or 0,
        "dynamo_compile_s": _r(_median([r["traced_compile_s"] for r in row["compiled"]]), 3),
        "distinct_shapes": len(sigs),
        "shape_changes": rec.get("shape_changes", 0),
        # forward only: the backward of these calls runs in loss.backward(), outside the
        # timed call, so it shows in the script's wall time, not in eager_ms/compiled_ms
        "backward_not_timed": bool(rec.get("grad_calls")),
        "shapes": list(sigs)[:3],
        "rounds": {"eager": len(row["eager"]), "compiled": len(row["compiled"])},
    }


def function_rows(eager_rounds: list[list[RunStats]], compiled_rounds: list[list[RunStats]]) -> list[dict]:
    """One row per compiled object (rank 0's view), medians over rounds.

    Each argument holds, per round, the probe runs of every rank of that round.
    """
    rows = [_function_row(row) for row in _per_object(eager_rounds, compiled_rounds).values()]
    rows.sort(key=lambda r: (r["compiled_at"]["file"] or "", r["compiled_at"]["line"] or 0))
    return rows


def peak_memory(eager_rounds: list[list[RunStats]], compiled_rounds: list[list[RunStats]]) -> dict:
    """Peak memory, eager vs compiled: CUDA allocator peak when the script used CUDA, else RSS.

    Per round the highest rank counts; over rounds, the median.
    """

    def peak(rounds: list[list[RunStats]], attr: str) -> int | None:
        per_round = [max((getattr(r, attr) or 0) for r in runs) for runs in rounds if runs]
        per_round = [p for p in per_round if p]
        return int(statistics.median(per_round)) if per_round else None

    cuda = peak(compiled_rounds, "cuda_bytes") is not None or peak(eager_rounds, "cuda_bytes") is not None
    attr = "cuda_bytes" if cuda else "rss_bytes"
    return {
        "eager": peak(eager_rounds, attr),
        "compiled": peak(compiled_rounds, attr),
        "kind": "cuda_allocator" if cuda else "process_rss",
        "unit": "bytes",
        "rss": {"eager": peak(eager_rounds, "rss_bytes"), "compiled": peak(compiled_rounds, "rss_bytes")},
    }


def wall_times(eager_rounds: list[list[RunStats]], compiled_rounds: list[list[RunStats]]) -> dict:
    """The script's own wall time (from the probe's install to exit), median over rounds, slowest rank."""

    def wall(rounds: list[list[RunStats]]) -> float | None:
        per_round = [max(r.script_s for r in runs) for runs in rounds if runs]
        return _r(statistics.median(per_round), 3) if per_round else None

    return {"eager_s": wall(eager_rounds), "compiled_s": wall(compiled_rounds)}
