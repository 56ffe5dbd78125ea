"""`fxlens doctor`'s human report: the summary line, functions side by side, memory, findings, and
with `--warm` cold vs warm start. In the report layer so that the doctor's result renders itself
(DoctorResult.lines) wherever it is read back.

Every speedup is printed beside its 95% interval; a direction ("faster", "slower") only when the
interval excludes 1 (fxlens.report.speedups.verdict), else "inconclusive" and why.
"""

from __future__ import annotations

from pathlib import Path

from fxlens.report.memorytext import memory_lines
from fxlens.report.speedups import MIN_PAIRS, combined_interval, fmt_interval, fmt_speedup, is_busy, verdict
from fxlens.report.texttable import tabulate
from fxlens.trace.userframes import short_path


def where(f: dict) -> str:
    """`file:line` of a finding (just the file when the line is unknown)."""
    if not f.get("file"):
        return "?"
    return short_path(f["file"]) + (f":{f['line']}" if f.get("line") else "")


def load_phrase(load: dict) -> str:
    """`load 5.2 on 2 cores`, as `os.getloadavg()` and the process's affinity saw it."""
    avg, others = load.get("average"), load.get("others_runnable")
    return f"load {'?' if avg is None else f'{avg:.1f}'} on {load.get('cores') or '?'} cores" + (
        f", {others:g} other task(s) runnable while timing" if others else ""
    )


def inconclusive_why(load: dict, samples: dict | None, interval, timing: dict | None = None) -> str:
    """Why there is no verdict: too few samples, wall and CPU time disagree, a busy machine, or no
    difference to measure."""
    n = min((samples or {}).values() or [0])
    timing = timing or {}
    if not interval:
        why = f"{n} sample(s) a side, fewer than the {MIN_PAIRS} an interval needs"
        if need := needed_budget(timing, n):
            spent = timing.get("pairs_seconds") or timing["seconds"]
            why += f" ({n} pairs took {spent:.1f} s at {load_phrase(load)}: `--budget {need}`)"
        return why
    if timing.get("disagreement"):
        return f"{timing['disagreement']}; {load_phrase(load)}"
    if timing.get("stopped") == "no_difference":
        return f"no difference: the interval is narrow around 1 ({n} pairs)"
    if timing.get("stopped") == "precise":
        return (
            f"a close call: within the spread between fresh processes ({n} pairs; more would not "
            "narrow it; `--rounds 3` measures that spread)"
        )
    spent = _spent(timing, n) + runs_phrase({**timing, "samples": samples or {}})
    if is_busy(load):
        return f"the machine was busy, {load_phrase(load)}{spent}"
    return f"no difference beyond the noise of this run{spent}"


def _spent(timing: dict, pairs: int) -> str:
    """`: still this wide after 60 s, the maximum (--budget)`, when sampling ran to its maximum."""
    if timing.get("stopped") != "budget" or not timing.get("max_s"):
        return ""
    return f"; still that wide after {pairs} pairs in {timing['max_s']:g} s, the maximum (`--budget`)"


def runs_phrase(timing: dict) -> str:
    """`; the speed held for runs of about 24 pairs (2.3 s) at a time ...`, when consecutive pairs
    moved together (fxlens.probe.interval.run_length), else ""."""
    n, pairs = timing.get("run_length") or 1, (timing.get("samples") or {}).get("eager") or 0
    if n <= 1:
        return ""
    spent = timing.get("pairs_seconds") or timing.get("seconds") or 0
    secs = f" ({spent / pairs * n:.1f} s)" if pairs and spent else ""
    threads = timing.get("threads") or 1
    common = (
        f"; with {threads} intra-op threads on CPU, OpenMP's workers spinning or asleep between "
        "kernels is a common one: `OMP_WAIT_POLICY=ACTIVE`, or one thread, holds a single state"
        if threads > 1
        else ""
    )
    return (
        f"; the speed held for runs of about {n} pairs{secs} at a time, each counted once in the "
        f"interval (a state of the process or machine that lasts seconds{common})"
    )


def stop_phrase(timing: dict) -> str:
    """Why sampling stopped, in words."""
    stopped, most = timing.get("stopped"), timing.get("max_s")
    if stopped == "interval":
        return "a large difference held: the interval, at the level of its looks, lay beyond [0.8, 1.25]"
    if stopped == "no_difference":
        return "the interval was narrow around 1"
    if stopped == "precise":
        return "more pairs would not narrow the interval: the spread between fresh processes is most of it"
    if stopped == "budget":
        return f"at the {most:g} s maximum (`--budget`)" if most else "at the budget"
    return str(stopped)


def needed_budget(timing: dict | None, pairs: int) -> int | None:
    """Seconds of `--budget` that would fit MIN_PAIRS pairs at the pace measured (None: unknown)."""
    timing = timing or {}
    spent = timing.get("pairs_seconds") or timing.get("seconds")
    if timing.get("method") != "interleaved" or not pairs or not spent or pairs >= MIN_PAIRS:
        return None
    return max(1, round(spent / pairs * MIN_PAIRS * 1.5))  # 1.5: room for the load to rise


def rerun_advice(load: dict, timing: dict | None = None, pairs: int = 0) -> str:
    """What to run instead of trusting an inconclusive or busy measurement."""
    quiet = "rerun when the machine is idle, or" if is_busy(load) else "rerun"
    if (timing or {}).get("method") == "separate_runs":
        # no re-timing after the script (distributed, or --budget 0): samples are the script's calls
        return (
            f"{quiet} with more calls in the script, or `fxlens doctor --rounds 3` (calls pool over rounds)"
        )
    need = needed_budget(timing, pairs) or max(120, 2 * round((timing or {}).get("max_s") or 60))
    return f"{quiet} with a longer budget (`fxlens doctor --budget {need} SCRIPT`)"


def overall(rows: list[dict], load: dict) -> str:
    """The run's steady-state verdict: call-weighted over functions, with its interval."""
    both = [r for r in rows if r["eager_ms"] is not None and r["compiled_ms"] is not None and r["calls"]]
    eager = sum(r["eager_ms"] * r["calls"] for r in both)
    compiled = sum(r["compiled_ms"] * r["calls"] for r in both)
    if not compiled:
        return ""
    ratio = eager / compiled
    iv = combined_interval(both)
    said = verdict(iv)
    if said == "faster":
        return f"compiled {ratio:.2f}x faster {fmt_interval(iv)} at steady state"
    if said == "slower":
        return f"compiled {1 / ratio:.2f}x slower (speedup {ratio:.2f}x {fmt_interval(iv)}) at steady state"
    samples = {"n": min((min(r["samples"].values()) for r in both if r.get("samples")), default=0)}
    return f"inconclusive: speedup {ratio:.2f}x {fmt_interval(iv)}: {inconclusive_why(load, samples, iv)}"


def summary(script: str, rows: list[dict], wall: dict, found: list[dict], load: dict) -> str:
    """One line: compiled functions, the steady-state verdict, compile time, wall times, top finding."""
    compile_s = sum(r["compile_s"] or 0.0 for r in rows)
    parts = [f"{Path(script).name}: {len(rows)} compiled function(s)"]
    if said := overall(rows, load):
        parts.append(f"{said}, {compile_s:.2f} s compiling")
    if wall["eager_s"] is not None and wall["compiled_s"] is not None:
        parts.append(f"script {wall['eager_s']:.2f} s eager vs {wall['compiled_s']:.2f} s compiled")
    top = found[0] if found else None
    parts.append(f"{len(found)} finding(s)" + (f", top: {top['kind']} at {where(top)}" if top else ""))
    return "; ".join(parts)


def _mib(n: int | None) -> str:
    return "?" if n is None else f"{n / 2**20:.0f} MiB"


def _num(x, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def _samples(f: dict) -> str:
    s = f.get("samples") or {}
    method = (f.get("timing") or {}).get("method")
    if not s:
        return "-"
    n = f"{s['eager']}" if s["eager"] == s["compiled"] else f"{s['eager']}/{s['compiled']}"
    return n + (" pairs" if method == "interleaved" else " calls")


def _pays_off(f: dict) -> str:
    """After how many calls compiling pays off: only beside a speed verdict (an inconclusive or
    capture-only row has no speedup to pay anything off with)."""
    if f.get("verdict") not in ("faster", "slower") or not f["calls"]:
        return "-"
    return _num(f["break_even_calls"], "d") if f["break_even_calls"] is not None else "never"


def _function_lines(result: dict) -> list[str]:
    """The compiled functions side by side: per-call times, speedup and interval, verdict, break-even."""
    rows = [
        [
            f["function"],
            f"{short_path(f['compiled_at']['file'] or '?')}:{f['compiled_at']['line']}",
            f["calls"],
            _num(f["eager_ms"], ".4g"),
            _num(f["compiled_ms"], ".4g"),
            fmt_speedup(f["speedup"], f.get("speedup_interval")),
            f.get("verdict") or "-",
            _samples(f),
            _num(f["compile_s"], ".2f")
            + (
                f" [{f['compile_s_range'][0]:.2f}, {f['compile_s_range'][1]:.2f}]"
                if f.get("compile_s_range")
                else ""
            ),
            _pays_off(f),
        ]
        for f in result["functions"]
    ]
    title = "Compiled functions (per call at steady state; speedup with its 95% interval"
    if any(f.get("backward_not_timed") for f in result["functions"]):
        title += "; forward only: backward runs outside the call and shows in the wall time"
    headers = ["function", "compiled at", "calls", "eager ms", "compiled ms", "speedup [95% CI]", "verdict"]
    headers += ["samples", "compile s", "pays off after"]
    return [title + "):", tabulate(rows, headers=headers, tablefmt="simple")]


def _timing_lines(result: dict) -> list[str]:
    """How the times were taken, and the machine's load while they were."""
    load = result.get("load") or {}
    out = [
        f"machine: {load_phrase(load)}"
        + (" (busy: other work competed for the cores)" if is_busy(load) else "")
    ]
    for f in result["functions"]:
        t = f.get("timing") or {}
        if t.get("method") == "interleaved":
            share = t.get("cpu_share") or {}
            out.append(
                f"  {f['function']}: eager and compiled interleaved, {f['samples']['eager']} block pairs in "
                f"{t.get('seconds', 0):.1f} s (stopped: {stop_phrase(t)}); process CPU / wall: "
                f"eager {_num(share.get('eager'), '.2f')}, compiled {_num(share.get('compiled'), '.2f')}"
                + _timed_on(f, t.get("timed_on"))
                + runs_phrase({**t, "samples": f["samples"]})
            )
        elif t:
            out.append(
                f"  {f['function']}: from the script's own calls, eager and compiled runs apart ({t.get('why')})"
            )
    replay = result.get("replay") or {}
    if replay.get("compiles"):
        out.append(
            f"  doctor's re-timing compiled {replay['compiles']} time(s) itself (kept out of the findings"
            + (f"; its trace: {short_path(replay['trace'])}" if replay.get("trace") else "")
            + ")"
        )
    return out


def _timed_on(f: dict, timed_on: dict | None) -> str:
    """Which of the script's calls the steady state stands for, when they did not all look alike."""
    if not timed_on or f.get("distinct_shapes", 1) <= 1:
        return ""
    return (
        f"; timed on inputs {timed_on['shapes']}, the most frequent shapes "
        f"({timed_on['calls']} of {f['calls']} calls)"
    )


def _memory_lines(result: dict) -> list[str]:
    mem, wall = result["peak_memory"], result["wall"]
    kind = "CUDA allocator" if mem["kind"] == "cuda_allocator" else "process RSS"
    rows = [
        ["script wall time", _num(wall["eager_s"], ".2f") + " s", _num(wall["compiled_s"], ".2f") + " s"],
        [f"peak memory ({kind})", _mib(mem["eager"]), _mib(mem["compiled"])],
    ]
    # memory by cause (fxlens.report.memorytext): the parts of the difference, per function too
    return ["", tabulate(rows, headers=["", "eager", "compiled"], tablefmt="simple"), "", *memory_lines(mem)]


def _finding_lines(result: dict) -> list[str]:
    found = result["findings"]
    if not found:
        return ["No findings: torch.compile does what it should here."]
    out = ["Findings, by measured or structural impact (ms lost over this run where measured):"]
    for i, f in enumerate(found, 1):
        cost = f"cost ~{f['cost_ms']:.0f} ms" if f["cost_ms"] else "cost not measured"
        out.append(f"{i:>2}. [{f['kind']}] {f['message']}  ({cost})")
        out.append(f"    at {where(f)}: {f['fix']}")
    return out


def parts_text(parts: dict, limit: int = 6) -> str:
    """`dynamo tracing 0.28 s, kernel loading 7.65 s, ...`, heaviest first."""
    rows = sorted(parts.items(), key=lambda kv: -kv[1])[:limit]
    return ", ".join(f"{k} {v:.2f} s" for k, v in rows) or "nothing"


def warm_lines(result: dict) -> list[str]:
    """`--warm`: the cold start against the warm one, and where the warm start still spends."""
    w = result.get("warm")
    if not w:
        return []
    cold, warm = w["cold"], w["warm"]
    proc = (
        f"; processes {cold['process_s']:.1f} s cold, {warm['process_s']:.1f} s warm"
        if cold.get("process_s") and warm.get("process_s")
        else ""
    )
    out = [
        "",
        "Cold vs warm start (three more compiled runs: cold, then warm from its private cache folder, "
        "then a fresh folder with its bundle loaded):",
        f"  {w['message']}{proc}",
    ]
    out.append(f"  the warm start still spends (torch's timed events): {parts_text(warm['parts']['parts'])}")
    b = w.get("bundle")
    if b:
        load = f" + {b['load_s']:.2f} s loading it" if b.get("load_s") is not None else ""
        out.append(
            f"  mega-cache bundle ({b['bundle_bytes'] / 1e6:.1f} MB), measured in a third process with an "
            f"empty cache folder: {b['compile_s']:.2f} s compiling{load} (cold {cold['compile_s']:.2f} s, "
            f"warm {warm['compile_s']:.2f} s); it still spends: {parts_text(b['parts']['parts'])}"
        )
    else:
        out.append("  mega-cache bundle: save_cache_artifacts() returned nothing, not measured")
    for h in w["hits"][:8]:
        saved = f", saved {h['saved_s']:.2f} s" if h.get("saved_s") else ""
        out.append(f"  warm hit: {h['compile_id']} {h['function']} {h['cache']}{saved}")
    out.append(f"  {w['suggestion']}")
    return out


def doctor_lines(result: dict) -> list[str]:
    """The human report's lines: compiled functions side by side, timing, memory and wall time,
    ranked findings."""
    ranks = result.get("ranks") or []
    head = f"fxlens doctor: {short_path(result['script'])}"
    if len(ranks) > 1:
        head += f" ({len(ranks)} ranks; per-call times: rank {ranks[0]}; memory and wall time: the largest over ranks)"
    out = [head, result["summary"], ""]
    out += _function_lines(result) + _timing_lines(result) + _memory_lines(result) + _finding_lines(result)
    out += warm_lines(result)
    out += ["", f"session: {result['session']}   (fxlens report / fxlens tui on it)"]
    return out


def render_text(result: dict) -> str:
    """The human report, as `fxlens doctor` prints it."""
    return "\n".join(doctor_lines(result)) + "\n"
