"""How a measured speedup reads: the verdict its interval allows, the whole run's interval, whether
the machine was busy, and the `3.10x [2.91, 3.40]` form.

Below the commands and the probe (the report layer) because a tool's result renders with them:
fxlens.report.doctor_text and `fxlens fix --speed`; fxlens.probe.interval computes the intervals.
"""

from __future__ import annotations

# fewer pairs (or per-mode samples) than this give no interval: a bootstrap of 5 values mostly
# resamples the same few medians and claims a precision it does not have
MIN_PAIRS = 12
# machine-wide 1-minute load per core above which doctor calls the machine busy
BUSY_LOAD_PER_CORE = 0.75


def verdict(interval: tuple[float, float] | list | None) -> str:
    """ "faster" / "slower" only when the interval excludes 1; otherwise "inconclusive"."""
    if not interval:
        return "inconclusive"
    low, high = interval
    if low > 1:
        return "faster"
    if high < 1:
        return "slower"
    return "inconclusive"


def combined_interval(rows: list[dict]) -> tuple[float, float] | None:
    """Interval of the whole run's speedup (sum of eager time over sum of compiled, call-weighted).

    The range of that ratio over the box of per-function intervals: it is monotone in each
    function's speedup, so its ends are every function at its low end, or at its high end. Its
    coverage is at least 1 - k * 5% (Bonferroni) for k functions; None when any row lacks one.
    """
    used = [r for r in rows if r.get("calls") and r.get("eager_ms") and r.get("compiled_ms")]
    if not used or any(not r.get("speedup_interval") for r in used):
        return None
    eager = sum(r["eager_ms"] * r["calls"] for r in used)
    lo = eager / sum(r["eager_ms"] * r["calls"] / r["speedup_interval"][0] for r in used)
    hi = eager / sum(r["eager_ms"] * r["calls"] / r["speedup_interval"][1] for r in used)
    return lo, hi


def is_busy(load: dict) -> bool:
    """Whether the recorded load says other work competed for the cores: the 1-minute load average,
    or the tasks seen runnable beside doctor's own while it timed (`others_runnable`)."""
    avg, machine = load.get("average"), load.get("machine_cores") or load.get("cores") or 1
    others = load.get("others_runnable")
    return (avg is not None and avg > BUSY_LOAD_PER_CORE * machine) or (
        others is not None and others > BUSY_LOAD_PER_CORE * machine
    )


def fmt_interval(interval) -> str:
    """`[2.91, 3.40]`, or `[no interval]`."""
    if not interval:
        return "[no interval]"
    return f"[{interval[0]:.2f}, {interval[1]:.2f}]"


def fmt_speedup(speedup: float | None, interval) -> str:
    """`3.10x [2.91, 3.40]`: the point estimate always beside its interval."""
    if speedup is None:
        return "-"
    return f"{speedup:.2f}x {fmt_interval(interval)}"
