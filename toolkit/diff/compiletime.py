"""Compile seconds between two runs, judged so a load spike is no regression and a real slowdown is.

Each `fxlens run` session records its compiles on the compiling thread's CPU clock (the
`compile_clock` event, fxlens.trace.compileclock). B is slower when its CPU seconds exceed A's by
more than the noise band (wider when either run met a busy machine) and by at least MIN_DELTA_S.
Sessions without the event (a bare TORCH_TRACE, an older fxlens) get torch's wall seconds, shown
and not gated.
"""

from __future__ import annotations

from fxlens.trace.compileclock import CompileClock, judge

# a difference below this is not judged: a compile of a second or less moves by imports and caches
MIN_DELTA_S = 0.5


def session_clock(report: dict) -> CompileClock | None:
    """The run's compile clock: its `compile_clock` events summed over processes (ranks)."""
    clocks = [
        c
        for e in report.get("events") or []
        if isinstance(e, dict) and e.get("event") == "compile_clock" and (c := CompileClock.from_dict(e))
    ]
    if not clocks:
        return None
    return CompileClock(
        sum(c.compiles for c in clocks),
        sum(c.wall_s for c in clocks),
        sum(c.cpu_s for c in clocks),
        max((c.load for c in clocks if c.load is not None), default=None),
        clocks[0].cores,
    )


def compile_time(a: dict, b: dict, gate: bool) -> dict:
    """`{a, b, clock_a, clock_b, judged, slower}`: torch's wall seconds of each side, each side's CPU
    clock, and the verdict on B's CPU seconds against A's (`slower` only when `gate`)."""
    ca, cb = session_clock(a), session_clock(b)
    out = {
        "a": (a.get("compile_times") or {}).get("total_s"),
        "b": (b.get("compile_times") or {}).get("total_s"),
        "clock_a": ca.as_dict() if ca else None,
        "clock_b": cb.as_dict() if cb else None,
        "judged": None,
        "slower": False,
    }
    if ca is None or cb is None or not ca.compiles or not cb.compiles:
        return out
    judged = judge(ca.cpu_s, cb, ca)
    out["judged"] = judged
    out["slower"] = bool(gate and judged["over"] and cb.cpu_s - ca.cpu_s >= MIN_DELTA_S)
    return out


def compile_time_line(ct: dict) -> str:
    """One line for the text diff: wall seconds, CPU seconds, the band, and whether it is gated."""
    if ct.get("a") is None or ct.get("b") is None:
        return ""
    head = f"Compile time: {ct['a']:.2f} s -> {ct['b']:.2f} s wall"
    j, ca = ct.get("judged"), ct.get("clock_a")
    if not j or not ca:
        return head + " (not gated: no CPU clock in both sessions)"
    verdict = (
        "SLOWER"
        if ct.get("slower")
        else "within the noise band"
        if not j["over"]
        else "over the band, by < 0.5 s"
    )
    return (
        f"{head}; on the compiling thread's CPU {ca['cpu_s']:.2f} s -> {j['cpu_s']:.2f} s (x{j['ratio']:.2f}, "
        f"band +{j['band']:.0%} for the load: the thread ran {ca['share']:.0%} / {j['share']:.0%} of the wall "
        f"time): {verdict}"
    )
