"""Peak tensor memory of a budgeted block: what a `peak_memory=` budget is checked against.

The block's peak is its tensor bytes at their highest above the level at its start, counted from
torch's profiler's allocation events (`profile_memory=True`: every CPU allocation and free is an
event, so the peak is exact, not sampled) and, where CUDA is initialised, the caching allocator's
own peak (`max_memory_allocated` after `reset_peak_memory_stats`). Compiling is inside the block,
so memory the compiler allocates as tensors (constant folding, autotuning inputs) counts too;
memory that is not a tensor (the compiler's Python objects) does not: `fxlens doctor` measures
that as RSS.

The profiler runs only for a block with a memory budget, and records allocation events only, no
op events (fxlens.backend.torch_compat.start_allocation_events): about 15 µs per allocation, nothing
measurable on a compile (BENCHMARKS.md, "peak_memory budget: the measurement's own cost").
"""

from __future__ import annotations

import re

UNITS = {"": 1, "b": 1, "kb": 10**3, "kib": 2**10, "mb": 10**6, "mib": 2**20, "gb": 10**9, "gib": 2**30}


def parse_bytes(value) -> int:
    """A budget in bytes: an int, or a string with a unit ("64MiB", "1.5 GB").

    Raises:
        ValueError: anything else, or a negative amount.
    """
    if isinstance(value, bool):
        raise ValueError(f"peak_memory={value!r}: expected bytes (an int) or a size like '64MiB'")
    if isinstance(value, int | float) and value >= 0:
        return int(value)
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", value) if isinstance(value, str) else None
    if m is None or m[2].lower() not in UNITS:
        raise ValueError(f"peak_memory={value!r}: expected bytes (an int) or a size like '64MiB'")
    return int(float(m[1]) * UNITS[m[2].lower()])


def mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


_active: list[PeakMemory] = []  # nested blocks, innermost last: one profiler runs at a time


class PeakMemory:
    """Measures one block: `start()`, the block, then `stop()` returns its peaks.

    The level counts the bytes of the allocations made in the block and not yet freed: a free of
    memory allocated before it (garbage a collection frees mid-block, a tensor of an earlier
    block) is matched by address and left out, so the peak depends neither on when the garbage
    collector runs nor on what ran before.

    Blocks nest (a marker's budget around an `fxlens.expect` block): torch runs one profiler at a
    time, so an outer block's profiler is closed while an inner one runs; the inner block counts
    the outer's live allocations too (their frees lower its level), and its peak, final level and
    live allocations are folded into the outer's, at the level the outer had reached."""

    def __init__(self):
        self._running = False  # whether this block's profiler runs now
        self._cuda_base: int | None = None
        self.level = self.cpu = 0  # bytes above the start: now, and at their highest
        self.live: dict[int, int] = {}  # address -> bytes of the block's allocations still alive
        self.outer: dict[int, int] = {}  # the same of the enclosing blocks, when nested
        self.result: dict | None = None

    def start(self) -> PeakMemory:
        import torch

        if torch.cuda.is_available() and torch.cuda.is_initialized() and not _active:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            self._cuda_base = torch.cuda.memory_allocated()
        if _active:
            _active[-1]._fold()
            self.outer = dict(_active[-1].live)
        _active.append(self)
        self._open()
        return self

    def _open(self) -> None:
        from fxlens.backend.torch_compat import start_allocation_events

        start_allocation_events()
        self._running = True

    def _fold(self) -> None:
        """Close the profiler and add its events to the running level and peak."""
        from fxlens.backend.torch_compat import stop_allocation_events

        self._running = False
        for _, ptr, n in stop_allocation_events():
            if n > 0:
                self.live[ptr] = n
                self.level += n
                self.cpu = max(self.cpu, self.level)
            elif ptr in self.live:
                self.level -= self.live.pop(ptr)
            elif ptr in self.outer:  # an enclosing block's allocation: its level drops
                self.level -= self.outer.pop(ptr)

    def stop(self) -> dict:
        """{cpu, cuda, peak} bytes above the block's start (cuda None without CUDA, or nested)."""
        import torch

        if not self._running:
            return self.result or {"cpu": 0, "cuda": None, "peak": 0}
        self._fold()
        _active.remove(self)
        if _active:  # the block enclosing this one goes on, from the level this one left
            outer = _active[-1]
            outer.cpu = max(outer.cpu, outer.level + self.cpu)
            outer.level += self.level
            outer.live = {**self.outer, **self.live}
            outer._open()
        cuda = None
        if self._cuda_base is not None:
            torch.cuda.synchronize()
            cuda = max(0, torch.cuda.max_memory_allocated() - self._cuda_base)
        self.result = {"cpu": self.cpu, "cuda": cuda, "peak": max(self.cpu, cuda or 0)}
        return self.result


def failure_lines(measured: dict, cap: int) -> list[str]:
    """What a broken `peak_memory` budget says under its head line."""
    where = f"CPU {mib(measured['cpu'])}" + (
        f", CUDA {mib(measured['cuda'])}" if measured.get("cuda") is not None else ""
    )
    return [
        f"peak_memory: {mib(measured['peak'])} of tensors above the block's start ({where}; from the "
        f"profiler's allocation events) (budget: at most {mib(cap)})",
        "      fix: `fxlens doctor SCRIPT` splits compiled memory by cause (activations saved for "
        "backward, tensors the compiled code holds, one copy per recompile) and `fxlens fix` measures "
        "each fix in bytes",
    ]
