"""The memory of the process doctor's probe runs in: peak RSS, and where it grew.

The side-by-side table compares peak RSS (or the CUDA allocator's peak). To say why the compiled
run's peak is higher, the probe also notes the peak RSS at three moments: when it starts (before
the script), around every compile (Dynamo's start and end callbacks), and when the script ends
(before doctor's own replay, which must not count). A peak only grows, so its growth splits exactly
into what happened while compiling and what happened while running (fxlens.doctor.memcauses).
"""

from __future__ import annotations

import os
import resource
import sys

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def max_rss() -> int:
    """The process's peak RSS so far, in bytes (Linux reports KiB, macOS bytes)."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss if sys.platform == "darwin" else rss * 1024


def current_rss() -> int | None:
    """The process's RSS now, in bytes (None where /proc is missing)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


class RssMarks:
    """Peak and current RSS at the probe's start, around each compile, and at the script's end."""

    def __init__(self) -> None:
        self.start = {"max": max_rss(), "now": current_rss()}
        self.compiles: list[dict] = []  # per compile: peak growth while compiling, RSS kept after
        self.end: dict | None = None
        self._open: dict | None = None

    def compile_started(self, paused: bool = False) -> None:
        if not paused:
            self._open = {"max": max_rss(), "now": current_rss()}

    def compile_ended(self, seconds: float) -> None:
        if self._open is None:
            return
        before, self._open = self._open, None
        now = current_rss()
        self.compiles.append(
            {
                "peak_growth": max_rss() - before["max"],
                "kept": (now - before["now"]) if now is not None and before["now"] is not None else None,
                "seconds": round(seconds, 3),
            }
        )

    def script_ended(self) -> None:
        if self.end is None:
            self.end = {"max": max_rss(), "now": current_rss()}

    def as_dict(self) -> dict:
        return {"start": self.start, "compiles": self.compiles[:500], "end": self.end or {"max": max_rss()}}


def process_peak_memory(marks: RssMarks | None = None) -> dict:
    """Process peak RSS in bytes, and CUDA allocator peaks when the script used CUDA.

    With `marks`, the peak is the one at the script's end (doctor's replay after it is not the
    script's), and the marks come along.
    """
    import torch

    if marks is not None:
        marks.script_ended()  # at exit, when the script did not end normally (no replay ran)
    peak = (marks.end or {}).get("max") if marks is not None else None
    out = {"rss_bytes": peak or max_rss(), "cuda_bytes": None}
    if marks is not None:
        out["rss_marks"] = marks.as_dict()
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        out["cuda_bytes"] = max(torch.cuda.max_memory_allocated(d) for d in range(torch.cuda.device_count()))
        out["cuda_reserved_bytes"] = max(
            torch.cuda.max_memory_reserved(d) for d in range(torch.cuda.device_count())
        )
    return out


def measure_call(call: tuple, call_state, probe) -> dict:
    """The tensor memory of a record's typical call, eager vs compiled (fxlens.probe.memprobe,
    imported only when doctor replays)."""
    from fxlens.probe.memprobe import measure_call as measure

    return measure(call, call_state, probe)
