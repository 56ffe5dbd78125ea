"""Dynamo's seconds by source line, as the runner wrote them into the trace (the JSON artifact
`fxlens_compile_lines`, one per compile attempt; fxlens.capture.linetime measures them).

Record kind this module owns: `artifact:fxlens_compile_lines`. Pure Python, no torch import.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fxlens.trace.kindtable import ReadContext
    from fxlens.trace.reader import Record
from fxlens.trace.timedevents import seconds_by_name, timed_events


@dataclass(frozen=True)
class LineTime:
    """One source line Dynamo traced: self seconds (its own instructions), inclusive seconds (with the
    functions it inlined), how many times the line was entered (`hits`) and instructions stepped."""

    line: int
    self_s: float
    incl_s: float
    hits: int
    steps: int


@dataclass(frozen=True)
class LoopTime:
    """A loop Dynamo unrolled: its first and last line, iterations traced, inclusive seconds."""

    line: int
    last_line: int
    iterations: int
    incl_s: float


@dataclass(frozen=True)
class FunctionTime:
    """One function (code object) Dynamo traced or inlined during one compile attempt."""

    file: str
    function: str
    first_line: int
    self_s: float
    incl_s: float
    lines: tuple[LineTime, ...]
    loops: tuple[LoopTime, ...]


@dataclass(frozen=True)
class LineWindow:
    """One compile attempt's tracing: the root translator's run (`run_s`), the seconds its steps
    took net of non-tracing work (`steps_s`), that work by bucket (output graph, backend), and the
    functions it traced. `outcome` is "ok" or the exception that ended the attempt (RestartAnalysis)."""

    compile_id: str
    rank: int | None
    attempt: int
    outcome: str
    run_s: float
    steps_s: float
    buckets: tuple[tuple[str, float], ...]
    functions: tuple[FunctionTime, ...]


def _f(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return 0.0


def _i(v) -> int:
    try:
        return int(v)
    except (TypeError, ValueError):
        return 0


def _function(d: dict) -> FunctionTime:
    return FunctionTime(
        str(d.get("file") or "?"),
        str(d.get("function") or "?"),
        _i(d.get("first_line")),
        _f(d.get("self_s")),
        _f(d.get("incl_s")),
        tuple(
            LineTime(_i(r[0]), _f(r[1]), _f(r[2]), _i(r[3]), _i(r[4]))
            for r in d.get("lines") or ()
            if len(r) >= 5
        ),
        tuple(LoopTime(_i(r[0]), _i(r[1]), _i(r[2]), _f(r[3])) for r in d.get("loops") or () if len(r) >= 4),
    )


def read_compile_lines(rec: Record, ctx: ReadContext) -> LineWindow:
    """An `fxlens_compile_lines` artifact as the rank model's `compile_lines` record."""
    data = rec.payload_json()
    if not isinstance(data, dict):
        raise ValueError("payload is not a JSON object")
    buckets = data.get("buckets") or {}
    return LineWindow(
        ctx.cid or "-",
        rec.rank,
        rec.compile_id.attempt if rec.compile_id else 0,
        str(data.get("outcome") or "ok"),
        _f(data.get("run_s")),
        _f(data.get("steps_s")),
        tuple((str(k), _f(v)) for k, v in buckets.items()) if isinstance(buckets, dict) else (),
        tuple(_function(f) for f in data.get("functions") or () if isinstance(f, dict)),
    )


# torch's own timed parts of Dynamo's compile (chromium events of `dynamo_timed`), by name
DYNAMO_EVENTS = (
    "bytecode_tracing",
    "build_guards",
    "insert_deferred_runtime_asserts",
    "backend_compile",
    "gc",
)


def chromium_parts(path: str | Path, wanted=DYNAMO_EVENTS) -> dict[str, dict[str, float]]:
    """compile id -> {event: seconds} of torch's timed events named in `wanted` (and each
    `compile_attempt_N`), summed per compile (fxlens.trace.timedevents reads them)."""
    return {cid: seconds_by_name(evs, wanted) for cid, evs in timed_events(path).items()}
