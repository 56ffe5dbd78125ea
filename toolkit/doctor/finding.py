"""What a doctor finding is: one record `{kind, message, file, line, fix, cost_ms, function}`.

Shared by fxlens.doctor.findings (code findings and the ranking) and fxlens.doctor.speed (the
findings that rest on measured speed).
"""

from __future__ import annotations

from fxlens.trace.userframes import short_path


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
