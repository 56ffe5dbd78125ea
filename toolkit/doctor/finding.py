"""What a doctor finding is: one record `{kind, message, file, line, fix, cost_ms, function}`.

Shared by fxlens.doctor.findings (code findings and the ranking) and fxlens.doctor.speed (the
findings that rest on measured speed).
"""

from __future__ import annotations

from fxlens.trace.userframes import short_path

# backends that only capture: they run Dynamo's graph as written (eager), or through AOTAutograd
# and then eagerly; nothing is compiled for speed, so there is no speedup to find, only overhead
CAPTURE_ONLY = (
    "eager",
    "aot_eager",
    "aot_eager_decomp_partition",
    "fxlens_eager",
    "fxlens_aot_eager",
)

# seconds of re-timing at most for such a backend: no verdict on speed is claimed for it, the timing
# only shows its overhead
CAPTURE_ONLY_BUDGET_S = 5.0


def capture_only(backend) -> bool:
    """Whether `backend` (a name, or the name doctor recorded for a callable) only captures."""
    return str(backend or "").rsplit(".", 1)[-1].rsplit(":", 1)[-1] in CAPTURE_ONLY


def loc(file: str | None, line: int | None) -> str:
    return f"{short_path(file)}:{line}" if file else "?"


def simple(function: str | None) -> str:
    """`Model.forward` -> `forward`, `DistributedDataParallel(Model).forward` -> `forward`."""
    return (function or "?").rsplit(".", 1)[-1]


def finding(kind: str, message: str, file, line, fix: str, cost_ms: float, function: str | None) -> dict:
    return {
        "kind": kind,
        "message": message,
        "file": file,
        "line": line,
        "fix": fix,
        "cost_ms": round(max(cost_ms, 0.0), 3),
        "function": function,
    }
