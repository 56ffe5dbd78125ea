"""`fxlens fix`'s text: one row per fix (before -> after, outputs, verdict), then the patches."""

from __future__ import annotations

from fxlens.report.fixes import change, fix_lines
from fxlens.report.speedups import fmt_speedup


def _speed(r: dict) -> str:
    """`0.83x [0.71, 1.06] -> 1.40x [1.22, 1.61]`: doctor's steady-state speedup, before -> after."""
    sp = r.get("speed") or {}

    def first(rows):
        row = (rows or [None])[0]
        return fmt_speedup(row.get("speedup"), row.get("speedup_interval")) if row else "-"

    return f"{first(sp.get('before'))} -> {first(sp.get('after'))}"


def render_text(result: dict) -> str:
    head = "fxlens fix: " + (
        "interrupted; the fixes measured so far"
        if result.get("interrupted")
        else "each fix tried in a re-run"
    )
    base = result.get("base") or {}
    lines = [head]
    lines += [f"note: {line}" for line in result.get("said") or []]
    if base.get("measures"):
        lines.append(f"first run: {change(base['measures'], None)}")
    lines += fix_lines(result, _speed)
    load = result.get("load") or {}
    if load.get("average") is not None:
        lines.append(
            f"(load average {load['average']} on {load.get('cores')} cores: compile seconds vary with it)"
        )
    if result.get("session"):
        lines.append(f"session: {result['session']}")
    return "\n".join(lines) + "\n"
