"""Confidence intervals on a speedup and the machine's load (the verdict an interval allows and
how it reads: fxlens.report.speedups).

Pure Python (the parent never imports torch for these; the child's stopping rule uses them too).

The speedup is a ratio of medians, eager over compiled. Its interval is a percentile bootstrap:
- over interleaved pairs (`paired_interval`): each resample draws whole (eager, compiled) pairs, so
  a load swing that hit both halves of a pair stays inside the pair, as it did when measured. The
  delta method would need a variance for a median, which the bootstrap gives without a density
  estimate; pairs keep the eager/compiled correlation that an unpaired test would throw away.
- over two independent samples (`unpaired_interval`): the fallback for runs doctor cannot re-call
  (distributed scripts): the eager and compiled per-call times come from different processes.

A percentile bootstrap can under-cover for small samples; below MIN_PAIRS there is no interval (and
so no verdict) at all. At MIN_PAIRS and at 30 pairs the 95% intervals held a known speedup in 94-100%
of 200 simulated runs (per-call lognormal noise, stalls, a drifting load; paired and unpaired):
tests/doctor/test_doctor_interval.py checks it.
"""

from __future__ import annotations

import math
import os
import random
import statistics

from fxlens.report.speedups import MIN_PAIRS

# resamples for the reported interval (the child's stopping rule uses fewer: it only needs a width)
RESAMPLES = 2000
# two-sided 95% interval
LEVEL = 0.95
# the spread of one function's speedup between fresh processes of the same script, as a standard
# deviation of its log, beyond what any one process's pairs show (memory layout, allocation, which
# core, a machine state that outlasts the process): fresh processes timed by hand with
# torch.utils.benchmark spread over 1-3% on one thread (BENCHMARKS.md, "fxlens doctor on real
# models"), and up to 8% a process apart under other work (bench/doctor_spread.py). A process's own
# interval cannot see it, so every reported interval includes it, divided by the root of the
# processes measured (--rounds N)
PROCESS_SPREAD = 0.03


def _ratio(eager: list[float], compiled: list[float]) -> float | None:
    c = statistics.median(compiled)
    return statistics.median(eager) / c if c > 0 else None


def _percentiles(stats: list[float], level: float) -> tuple[float, float]:
    stats.sort()
    lo = stats[int((1 - level) / 2 * (len(stats) - 1))]
    hi = stats[int((1 + level) / 2 * (len(stats) - 1))]
    return lo, hi


def run_length(pairs: list[tuple[float, float]]) -> int:
    """How many consecutive pairs move together: 1 + the first lag at which the autocorrelation of
    the pairs' log ratios falls to noise (2 / sqrt(n)), at most n // 3.

    Pairs are taken in time order. On a quiet machine they are independent (1). A process that
    switches between two speeds for seconds at a time is not: ViT compiled with inductor, 2 intra-op
    threads on 2 cores, ran at 1.24x for 2-8 s, then 0.96x for 2-8 s, over and over (OpenMP's
    workers spinning or asleep between kernels); its runs of 20-80 pairs are what this measures.
    """
    n = len(pairs)
    logs = [math.log(e / c) for e, c in pairs if e > 0 and c > 0]
    if len(logs) != n or n < MIN_PAIRS:
        return 1
    mean = sum(logs) / n
    dev = [x - mean for x in logs]
    var = sum(d * d for d in dev)
    if var <= 0:
        return 1
    noise = 2 / math.sqrt(n)
    for lag in range(1, n // 3 + 1):
        if sum(dev[i] * dev[i + lag] for i in range(n - lag)) / var < noise:
            return lag
    return n // 3


def _resample(rng: random.Random, pairs: list, block: int) -> list:
    """As many pairs as `pairs`, drawn with replacement in runs of `block` consecutive ones."""
    n = len(pairs)
    if block <= 1:
        return [pairs[rng.randrange(n)] for _ in range(n)]
    draw: list = []
    while len(draw) < n:
        start = rng.randrange(n - block + 1)
        draw += pairs[start : start + block]
    return draw[:n]


def paired_interval(
    pairs: list[tuple[float, float]],
    resamples: int = RESAMPLES,
    level: float = LEVEL,
    seed: int = 0,
    block: int | None = None,
) -> tuple[float, float] | None:
    """Bootstrap interval of median(eager) / median(compiled) over interleaved (eager, compiled) pairs.

    A moving-block bootstrap over the pairs in time order: each resample joins runs of `run_length`
    consecutive pairs (single pairs when they are independent, the plain paired bootstrap), so a
    speed that held for seconds counts as one observation, not as many that agree.
    `block` overrides the run length (1: the plain paired bootstrap). None with fewer than MIN_PAIRS
    pairs. Seeded: the same pairs always give the same interval.
    """
    if len(pairs) < MIN_PAIRS:
        return None
    rng = random.Random(seed)
    block = run_length(pairs) if block is None else block
    stats = []
    for _ in range(resamples):
        draw = _resample(rng, pairs, block)
        r = _ratio([e for e, _ in draw], [c for _, c in draw])
        if r is not None:
            stats.append(r)
    return _percentiles(stats, level) if stats else None


def clustered_interval(
    groups: list[list[tuple[float, float]]], resamples: int = RESAMPLES, level: float = LEVEL, seed: int = 0
) -> tuple[float, float] | None:
    """Bootstrap interval of the speedup over pairs measured in several processes (doctor's rounds).

    A fresh process is a source of spread of its own (allocation, memory layout, which core it got):
    on the real models of BENCHMARKS.md one process's interval was 1-6% wide while fresh processes'
    speedups spread over 9%. Pooling every pair into one paired bootstrap would treat them as one
    process's. So each resample draws processes with replacement, then pairs within each drawn
    process: the interval spans the spread between processes as well as within. None when the
    pooled pairs are fewer than MIN_PAIRS; one group is `paired_interval`.
    """
    groups = [g for g in groups if g]
    if sum(len(g) for g in groups) < MIN_PAIRS:
        return None
    if len(groups) == 1:
        return paired_interval(groups[0], resamples, level, seed)
    rng = random.Random(seed)
    blocks = [run_length(g) for g in groups]
    stats = []
    for _ in range(resamples):
        draw = []
        for _ in groups:
            k = rng.randrange(len(groups))
            draw += _resample(rng, groups[k], blocks[k])
        r = _ratio([e for e, _ in draw], [c for _, c in draw])
        if r is not None:
            stats.append(r)
    return _percentiles(stats, level) if stats else None


def unpaired_interval(
    eager: list[float], compiled: list[float], resamples: int = RESAMPLES, level: float = LEVEL, seed: int = 0
) -> tuple[float, float] | None:
    """Bootstrap interval of the ratio of medians of two independent samples (None when either is small)."""
    if len(eager) < MIN_PAIRS or len(compiled) < MIN_PAIRS:
        return None
    rng = random.Random(seed)
    stats = []
    for _ in range(resamples):
        e = [eager[rng.randrange(len(eager))] for _ in eager]
        c = [compiled[rng.randrange(len(compiled))] for _ in compiled]
        r = _ratio(e, c)
        if r is not None:
            stats.append(r)
    return _percentiles(stats, level) if stats else None


def pair_ratio(pairs: list[tuple[float, float]]) -> float | None:
    """The median of the per-pair ratios eager / compiled: the stopping rule's estimate. A load swing
    that hit both halves of a pair cancels in its ratio (it does not in a ratio of two medians), so
    this one is sure of a large difference after fewer pairs."""
    ratios = [e / c for e, c in pairs if c > 0]
    return statistics.median(ratios) if ratios else None


def log_se(pairs: list[tuple[float, float]], block: int | None = None, resamples: int = 200, seed: int = 0):
    """Standard error of log(pair_ratio(pairs)), from a moving-block bootstrap (runs of
    `run_length` pairs, as `paired_interval` resamples). None with fewer than MIN_PAIRS pairs.

    The sequential stopping rule needs intervals at levels far beyond 95% (it looks many times and
    spends its error over the looks); a percentile bootstrap of a few hundred resamples cannot reach
    those tails, while the log of a median ratio is close to normal, so its standard error does.
    """
    if len(pairs) < MIN_PAIRS or any(e <= 0 or c <= 0 for e, c in pairs):
        return None
    rng = random.Random(seed)
    logs = [(math.log(e / c), 0.0) for e, c in pairs]
    block = run_length(pairs) if block is None else block
    stats = [statistics.median(x for x, _ in _resample(rng, logs, block)) for _ in range(resamples)]
    return statistics.stdev(stats)


def z_score(level: float) -> float:
    """The two-sided normal quantile of a confidence level (0.95 -> 1.96)."""
    return statistics.NormalDist().inv_cdf((1 + level) / 2)


def spent_level(look: int, alpha: float = 1 - LEVEL) -> float:
    """The confidence level of look number `look` (1, 2, ...) of a sequential test that spends
    `alpha` over all its looks: alpha * 6 / (pi^2 * look^2) at each, which sums to alpha however many
    looks it takes (a Bonferroni bound; the early looks, where a large difference shows, get most)."""
    return 1 - alpha * 6 / (math.pi**2 * look**2)


def normal_interval(ratio: float, sd: float, level: float) -> tuple[float, float]:
    """ratio * exp(-+ z * sd): an interval on the log scale, where a ratio's errors are symmetric."""
    half = z_score(level) * sd
    return ratio * math.exp(-half), ratio * math.exp(half)


def with_process_spread(interval, ratio: float | None, processes: int = 1, level: float = LEVEL):
    """`interval` widened by the spread between fresh processes (PROCESS_SPREAD, over the root of
    the processes measured): each end's distance from `ratio`, on the log scale, joined in
    quadrature with z * PROCESS_SPREAD / sqrt(processes). None stays None."""
    if not interval or not ratio or ratio <= 0 or interval[0] <= 0:
        return interval
    extra = (z_score(level) * PROCESS_SPREAD) ** 2 / max(1, processes)
    lo = math.log(ratio / min(interval[0], ratio))
    hi = math.log(max(interval[1], ratio) / ratio)
    return ratio * math.exp(-math.sqrt(lo * lo + extra)), ratio * math.exp(math.sqrt(hi * hi + extra))


def cores() -> int:
    """Cores this process may run on (its affinity), else the machine's count."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def load_average() -> float | None:
    """The machine's 1-minute load average (None where the OS has none)."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def runnable_tasks() -> int | None:
    """Tasks the kernel has runnable right now, machine-wide, this one included (the numerator of
    /proc/loadavg's fourth field; None where there is none).

    The 1-minute load average lags: work that started a few seconds before doctor's sampling reads
    as a quiet machine for most of a minute. This count is the contention of the moment a block ran.
    """
    try:
        with open("/proc/loadavg", encoding="ascii") as f:
            return int(f.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return None
