"""Compile seconds that a busy machine does not inflate: the CPU time of the thread that compiled.

torch times each compile by the wall clock (`entire_frame_compile_time_s`): on a machine where other
processes compete for the cores, the same compile takes longer, and a gate on those seconds fails on
a load spike. The thread that compiles does the same work either way, so its CPU time
(`time.thread_time`) moves far less. Each compile starts with torch's `dynamo_start` record and ends
with its `compilation_metrics` record, both logged on the compiling thread through torch's trace
logger: `stamp` marks those records with both clocks as they are logged (the runner's handler and
the compile budgets' capture call it), `clock` pairs them per thread.

`judge` compares two clocks (a budget, or run A against run B) with a noise band that widens with
the share of the compile's wall time the thread did not run (the load it met).
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import asdict, dataclass

_START, _END = "dynamo_start", "compilation_metrics"
# the band: relative noise of CPU seconds on an idle machine, and how much it widens per unit of
# wall time lost to other processes (shared caches and cores slow the CPU work too, less than the wall)
BAND_IDLE = 0.15
BAND_PER_LOST = 0.5


def stamp(record) -> None:
    """Mark a trace LogRecord that starts or ends a compile with (wall, thread CPU) seconds."""
    meta = getattr(record, "metadata", None)
    if meta and (_START in meta or _END in meta):
        record.fxlens_clock = (time.perf_counter(), time.thread_time())


@dataclass(frozen=True)
class CompileClock:
    """Compiles timed on the compiling thread: wall and CPU seconds summed, and the machine's load."""

    compiles: int
    wall_s: float
    cpu_s: float
    load: float | None = None  # 1-minute load average when the clock was read
    cores: int | None = None

    @property
    def share(self) -> float:
        """The share of the compiles' wall time the compiling thread ran (1.0: it never waited)."""
        return min(1.0, self.cpu_s / self.wall_s) if self.wall_s > 0 else 1.0

    def as_dict(self) -> dict:
        return {**asdict(self), "share": round(self.share, 4)}

    @classmethod
    def from_dict(cls, d: dict | None) -> CompileClock | None:
        if not isinstance(d, dict):
            return None
        try:
            return cls(
                int(d["compiles"]), float(d["wall_s"]), float(d["cpu_s"]), d.get("load"), d.get("cores")
            )
        except (KeyError, TypeError, ValueError):
            return None


def clock(records) -> CompileClock:
    """The compiles among stamped `records` (LogRecords in log order), paired per thread."""
    open_at: dict[int, list[tuple[float, float]]] = {}
    n, wall, cpu = 0, 0.0, 0.0
    for rec in records:
        stamped = getattr(rec, "fxlens_clock", None)
        if stamped is None:
            continue
        meta = getattr(rec, "metadata", None) or {}
        starts = open_at.setdefault(getattr(rec, "thread", 0) or 0, [])
        if _START in meta:
            starts.append(stamped)
        elif starts:
            w0, c0 = starts.pop()
            n, wall, cpu = n + 1, wall + stamped[0] - w0, cpu + stamped[1] - c0
    return CompileClock(n, round(wall, 6), round(cpu, 6), _load(), os.cpu_count())


def _load() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def band(*clocks: CompileClock) -> float:
    """The relative noise band for these clocks: wider the more wall time the thread waited."""
    lost = max((1.0 - c.share for c in clocks), default=0.0)
    return round(BAND_IDLE + BAND_PER_LOST * lost, 4)


def judge(before: float, after: CompileClock, *others: CompileClock) -> dict:
    """`after`'s CPU seconds against `before` seconds (a budget, or run A's CPU seconds): over when
    above `before` by more than the band. Returns {over, ratio, band, limit_s, cpu_s, wall_s, share}."""
    b = band(after, *others)
    limit = before * (1 + b)
    return {
        "over": after.cpu_s > limit,
        "ratio": round(after.cpu_s / before, 4) if before > 0 else None,
        "band": b,
        "limit_s": round(limit, 6),
        "cpu_s": after.cpu_s,
        "wall_s": after.wall_s,
        "share": round(after.share, 4),
    }


class ClockHandler(logging.Handler):
    """A handler for torch's trace logger that keeps only the stamped compile start and end records."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list = []

    def emit(self, record: logging.LogRecord) -> None:
        stamp(record)
        if getattr(record, "fxlens_clock", None) is not None:
            self.records.append(record)

    def clock(self) -> CompileClock:
        return clock(self.records)
