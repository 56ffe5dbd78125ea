"""Interleaved eager-vs-compiled timing in the compiled child, after the script has run.

Separate eager and compiled processes see different moments of a shared machine: a load swing
between them reads as a speedup. So, once the script is done (its objects still alive), the
probe calls each compiled object again with its typical arguments, alternating eager (the object
torch.compile was given) and compiled (what it returned) in blocks, so that a swing hits both
halves of a pair. Each block is one `torch.utils.benchmark.Timer.timeit(number)`: Timer compiles
the statement, disables GC while timing, synchronises CUDA around the block and keeps the
script's thread count; its `Measurement` gives each mode's median and IQR. Process CPU time is
read around each block beside wall time: a process that got a fraction of the wall time was
waiting for a core (or sleeping).

Blocks continue (adaptive, like `Timer.adaptive_autorange`, but on the speedup's interval rather
than one timer's IQR) until a sequential test may stop (`stop_reason`): a large difference that
holds stops as soon as the interval, at a level that accounts for every look taken, is sure of it;
a close call samples at least MIN_SPAN_S and stops once more pairs would not narrow its interval,
or at the time budget, a maximum: a slow call on a busy machine keeps sampling, and is called
inconclusive only at that maximum.
"""

from __future__ import annotations

import math
import time

from fxlens.probe.argstate import changed, fingerprint, param_names
from fxlens.probe.interval import (
    PROCESS_SPREAD,
    cores,
    load_average,
    log_se,
    normal_interval,
    pair_ratio,
    run_length,
    runnable_tasks,
    spent_level,
)
from fxlens.report.speedups import MIN_PAIRS

# wall time one block of one mode aims for: long enough for the timer's overhead to vanish and to
# span many scheduler slices (a loaded Linux box hands out 3-6 ms slices: with 5 ms blocks one
# half of a pair is preempted and the other not, which read as a 3x swing), short enough that
# the two halves of a pair see the same load
BLOCK_S = 0.05
# a difference beyond this band (compiled 20% slower or 25% faster) is a large one: it stops sampling
# as soon as it is sure, below it a close call samples at least MIN_SPAN_S
ZONE = (0.8, 1.25)
# the stopping rule looks at the pairs each time they have grown by this factor (12, 15, 19, 24, ...
# pairs): few looks (about 17 in a minute of 50 ms blocks), each a small bootstrap
LOOK_GROWTH = 1.25
# a large difference must hold in each of this many consecutive parts of the pairs (in time order)
HOLD_PARTS = 3
# ... and over at least this many seconds of pairs: a process can hold one speed for seconds
# (fxlens.probe.interval.run_length: ViT on 2 threads switched between 1.24x and 0.96x every 2-8 s);
# a switch inside them breaks the hold of a part. A state that outlasts them is not seen (a state
# that outlasted MIN_SPAN_S was not either): --rounds measures other processes' states
HOLD_S = 4.0
# the least wall time the block pairs span before a close call may stop (at most half the budget):
# one second of pairs inside one state gave a narrow 1.25x [1.24, 1.26] where a by-hand minute
# measured 0.92x; ten seconds see the switches, and the block bootstrap then widens the interval
MIN_SPAN_S = 10.0
# calls of the compiled object before timing, to reach a call that compiles nothing
MAX_WARMUP = 4
# a torch call costs at most this much dispatch overhead on any CPU doctor runs on (typical: 5-20 µs)
CALL_OVERHEAD_S = 50e-6
# pessimistic throughputs of one busy-free core: dense FLOPs, and bytes of tensor output written
FLOPS_PER_S = 2e9
BYTES_PER_S = 1e9
# Python around the calls (argument parsing, module __call__, hooks)
FLOOR_S = 5e-4


def _timer(fn, args: tuple, kwargs: dict, label: str):
    import torch
    from torch.utils.benchmark import Timer

    return Timer(
        stmt="fn(*args, **kwargs)",
        globals={"fn": fn, "args": args, "kwargs": kwargs},
        # Timer defaults to 1 thread; the script's own setting is what its calls ran with
        num_threads=torch.get_num_threads(),
        label="fxlens doctor",
        description=label,
    )


def _block(timer, number: int):
    """One timed block: (Measurement, its wall seconds incl. Timer's warmup, process CPU seconds)."""
    w0, c0 = time.perf_counter(), time.process_time()
    m = timer.timeit(number)
    return m, time.perf_counter() - w0, time.process_time() - c0


def _calls(number: int) -> int:
    """Calls one `Timer.timeit(number)` makes: its warmup (1%, at least 2) and the block."""
    return number + max(number // 100, 2)


def _summary(measurements: list, wall: float, cpu: float) -> dict:
    from torch.utils.benchmark import Measurement

    (merged,) = Measurement.merge(measurements)
    return {
        "median_ms": round(merged.median * 1000, 6),
        "iqr_ms": round(merged.iqr * 1000, 6),
        "significant_figures": merged.significant_figures,
        "timer_warnings": bool(merged.has_warnings),
        # >1 with intra-op threads; well under 1: the process waited (for a core, or in a sleep)
        "cpu_share": round(cpu / wall, 3) if wall > 0 else None,
    }


def work_estimate(fn, args: tuple, kwargs: dict) -> dict:
    """What one eager call does (torch calls, dense FLOPs, bytes of tensor output) and the time that
    work takes at most on a core of its own: the yardstick for "eager is implausibly slow"."""
    import torch
    from torch.overrides import TorchFunctionMode
    from torch.utils.flop_counter import FlopCounterMode

    seen = {"calls": 0, "bytes": 0}

    class _Count(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            seen["calls"] += 1
            if isinstance(out, torch.Tensor):
                seen["bytes"] += out.numel() * out.element_size()
            return out

    with FlopCounterMode(display=False) as flops, _Count():
        fn(*args, **kwargs)
    total = flops.get_total_flops()
    bound = FLOOR_S + seen["calls"] * CALL_OVERHEAD_S + total / FLOPS_PER_S + seen["bytes"] / BYTES_PER_S
    return {
        "torch_calls": seen["calls"],
        "flops": int(total),
        "bytes_out": int(seen["bytes"]),
        "quiet_bound_ms": round(bound * 1000, 4),
    }


def measure(
    eager_fn,
    compiled_fn,
    args: tuple,
    kwargs: dict,
    budget_s: float,
    compiles,
    min_span_s: float | None = None,
) -> dict:
    """Interleave eager and compiled blocks until the speedup's interval is narrow or the budget is spent.

    Args:
        eager_fn, compiled_fn: the object given to torch.compile and what it returned (untimed).
        args, kwargs: the latest call of the script's most frequent input shapes.
        budget_s: wall seconds of block pairs (warm-up and the work count come on top).
        compiles: a callable returning how many compiles have run so far in this process.
        min_span_s: the least seconds of pairs before a close call stops (default MIN_SPAN_S);
            at most half of `budget_s`.

    Returns:
        `{pairs: [[eager_ms, compiled_ms], ...], number, eager, compiled, work, load, seconds,
        stopped, max_s, compiles_during}`; per-call milliseconds, one pair per block pair; `stopped`
        is "interval" (a large difference held, `stop_reason`), "precise" (more pairs would not
        narrow the interval) or "budget" (the maximum, `max_s`, was spent).
    """
    start = time.perf_counter()
    load0 = load_average()
    eager_t = _timer(eager_fn, args, kwargs, "eager")
    compiled_t = _timer(compiled_fn, args, kwargs, "compiled")
    one_e, one_c = _warm_up(eager_t, compiled_t, compiles, (eager_fn, args, kwargs))
    try:
        work = work_estimate(eager_fn, args, kwargs)
    except Exception as e:  # noqa: BLE001 - a yardstick that cannot be read must not cost the timing
        work = {"error": f"{type(e).__name__}: {str(e)[:120]}"}
    # per mode, enough calls that a block lasts BLOCK_S: both halves of a pair span the same time
    number = {"eager": max(1, round(BLOCK_S / one_e)), "compiled": max(1, round(BLOCK_S / one_c))}
    before = compiles()
    # the budget is for pairs: on a big model the warm-up and the work count (a dispatch mode
    # over hundreds of ops) can take seconds of their own, and a budget they ate gave 1 pair
    pairs_start = time.perf_counter()
    span = min(MIN_SPAN_S if min_span_s is None else min_span_s, budget_s / 2)
    got = _interleave({"eager": eager_t, "compiled": compiled_t}, number, pairs_start, budget_s, span)
    return {
        **got,
        "work": work,
        "load": {"start": load0, "end": load_average(), "cores": cores(), **_contention(got.pop("runnable"))},
        "seconds": round(time.perf_counter() - start, 3),
        "max_s": budget_s,
        "min_span_s": round(span, 3),
        "threads": _threads(),
        # consecutive pairs that moved together (1: independent; fxlens.probe.interval.run_length)
        "run_length": run_length(got["pairs"]),
        "pairs_seconds": round(time.perf_counter() - pairs_start, 3),
        "compiles_during": compiles() - before,
    }


class ReplayRefused(Exception):
    """The call cannot be re-timed as it is (fxlens.probe.argstate): the reason, in words."""


def _warm_up(eager_t, compiled_t, compiles, call: tuple) -> tuple[float, float]:
    """One call of each mode's seconds, after warming the compiled object up to a call that compiles
    nothing (a new grad mode, say). Raises ReplayRefused when those calls changed the arguments of
    `call` (eager_fn, args, kwargs): every replay would then time another call."""
    eager_fn, args, kwargs = call
    names = param_names(eager_fn, len(args))
    before_call = fingerprint(args, kwargs, names)
    for _ in range(MAX_WARMUP):
        before = compiles()
        one_c = _block(compiled_t, 1)[0].median
        if compiles() == before:
            break
    one_e = _block(eager_t, 1)[0].median
    if why := changed(before_call, fingerprint(args, kwargs, names)):
        raise ReplayRefused(
            f"each call changes its arguments ({why}: a cache it appends to?), so a replay would "
            "time a different call each time; the times are the script's own calls"
        )
    return one_e, one_c


def _interleave(timers: dict, number: dict, start: float, budget_s: float, min_span_s: float) -> dict:
    """Block pairs, eager and compiled, until the interval is narrow (after `min_span_s` at least)
    or the budget is spent."""
    ms = {"eager": [], "compiled": []}
    wall = {"eager": 0.0, "compiled": 0.0}
    cpu = {"eager": 0.0, "compiled": 0.0}
    pairs: list[list[float]] = []
    # process CPU ms per call, per block pair: immune to waiting for a core (not to spinning
    # threads), the cross-check a wall-time verdict must not contradict (fxlens.probe.stats)
    cpu_pairs: list[list[float]] = []
    stopped = "budget"
    runnable: list[int] = []
    looks, next_look = 0, MIN_PAIRS
    while True:
        # alternate which mode goes first, so neither always runs on caches the other warmed
        order = ("eager", "compiled") if len(pairs) % 2 == 0 else ("compiled", "eager")
        got, got_cpu = {}, {}
        for mode in order:
            m, w, c = _block(timers[mode], number[mode])
            ms[mode].append(m)
            wall[mode] += w
            cpu[mode] += c
            got[mode] = m.median * 1000
            got_cpu[mode] = c / _calls(number[mode]) * 1000
            # the first call's time was one moment's; under load a block can run 5x longer than
            # planned and starve the budget of pairs: steer each block back towards BLOCK_S
            number[mode] = max(1, round(number[mode] * min(2.0, max(0.5, BLOCK_S / max(w, 1e-9)))))
        pairs.append([round(got["eager"], 6), round(got["compiled"], 6)])
        if (now := runnable_tasks()) is not None:
            runnable.append(now)
        cpu_pairs.append([round(got_cpu["eager"], 6), round(got_cpu["compiled"], 6)])
        if len(pairs) >= next_look:
            looks, next_look = looks + 1, math.ceil(len(pairs) * LOOK_GROWTH)
            if stop := stop_reason(pairs, time.perf_counter() - start, looks, min_span_s):
                stopped = stop
                break
        if time.perf_counter() - start >= budget_s:
            break
    return {
        "pairs": pairs,
        "cpu_pairs": cpu_pairs,
        "number": number,  # calls per block at the end (steered towards BLOCK_S)
        "eager": _summary(ms["eager"], wall["eager"], cpu["eager"]),
        "compiled": _summary(ms["compiled"], wall["compiled"], cpu["compiled"]),
        "stopped": stopped,
        "looks": looks,
        "runnable": runnable,
    }


def _threads() -> int:
    import torch

    return torch.get_num_threads()


def _contention(runnable: list[int]) -> dict:
    """What competed for the cores while the blocks ran: the median of the runnable-task counts taken
    after each block pair, and how many of them were not this process's (its intra-op threads, which
    may still spin between blocks, are all counted as its own: the count of others is a floor)."""
    import statistics

    if not runnable:
        return {}
    median = statistics.median(runnable)
    return {"runnable": median, "others_runnable": max(0.0, median - _threads())}


def stop_reason(pairs: list, seconds: float, look: int, min_span_s: float = MIN_SPAN_S) -> str | None:
    """Whether sampling may stop at look number `look` (1, 2, ...), `seconds` into the pairs.

    A sequential test: each look's interval is at the level `spent_level(look)`, so the chance that
    any look of the run stops on a difference that is not there stays under 5% however many looks
    it takes. The intervals are this process's own: more pairs narrow only that part of the reported
    one, which adds the spread between fresh processes (PROCESS_SPREAD).
    - "interval": the interval lies wholly beyond ZONE (a large difference), and it holds: in each
      of HOLD_PARTS consecutive parts of the pairs, over HOLD_S at least. No fixed span beyond that.
    - "precise": after `min_span_s`, the process's own noise is under half the spread between
      processes, so more pairs would barely narrow the interval. Whether that interval holds 1 or not,
      the stop does not depend on where it lies, and a close call gets no early "difference" from it.
    None: go on sampling (until the budget).
    """
    ratio, se = pair_ratio(pairs), log_se(pairs)
    if not ratio or se is None:
        return None
    # this process's own interval: the spread between processes (in the reported interval) is the
    # same however long this one samples, so it cannot decide when to stop
    lo, hi = normal_interval(ratio, se, spent_level(look))
    hold_s = min(HOLD_S, min_span_s)  # a shorter least span (FXLENS_DOCTOR_MIN_SPAN) shortens both
    if (lo > ZONE[1] or hi < ZONE[0]) and seconds >= hold_s and _holds(pairs, lo > ZONE[1]):
        return "interval"
    if seconds >= min_span_s and se <= PROCESS_SPREAD / 2:
        return "precise"
    return None


def _holds(pairs: list, faster: bool) -> bool:
    """Each of HOLD_PARTS consecutive parts of the pairs is beyond ZONE on the same side."""
    size = len(pairs) // HOLD_PARTS
    for k in range(HOLD_PARTS):
        r = pair_ratio(pairs[k * size : (k + 1) * size])
        if not r or not (r > ZONE[1] if faster else r < ZONE[0]):
            return False
    return True
