"""`fxlens fix`'s text: one row per fix (before -> after, outputs, verdict), then the patches."""

from __future__ import annotations

from fxlens.doctor.interval import fmt_speedup

_MEASURES = (
    ("graphs", "graphs"),
    ("breaks", "breaks"),
    ("recompiles", "recompiles"),
    ("compile_s", "compile s"),
)


def _change(before: dict | None, after: dict | None) -> str:
    if not before:
        return "-"
    parts = []
    for k, label in _MEASURES:
        b = before.get(k)
        a = (after or {}).get(k) if after else None
        fmt = (lambda v: f"{v:.2f}") if k == "compile_s" else str
        if b is None:
            continue
        parts.append(f"{label} {fmt(b)}" + (f" -> {fmt(a)}" if a is not None else ""))
    return ", ".join(parts)


def _equal(r: dict) -> str:
    eq = r.get("outputs_equal")
    return "-" if eq is None else ("yes" if eq else "NO")


def _speed(r: dict) -> str:
    sp = r.get("speed") or {}

    def first(rows):
        row = (rows or [None])[0]
        return fmt_speedup(row.get("speedup"), row.get("speedup_interval")) if row else "-"

    return f"{first(sp.get('before'))} -> {first(sp.get('after'))}" if sp else ""


def fix_lines(result: dict) -> list[str]:
    """The fixes as text lines (also the report's section when a session holds fix results)."""
    fixes = result.get("fixes") or []
    if not fixes:
        return ["No finding of this run has a fix fxlens can try or state as code."]
    out = []
    for i, r in enumerate(fixes, 1):
        out.append(f"{i}. [{r['verdict']}] {r['fix']}  ({r['how']})")
        out.append(f"   finding: {r['finding']}")
        if r["verdict"] != "not tried":
            out.append(f"   {_change(r.get('before'), r.get('after'))}; outputs equal: {_equal(r)}")
            if r.get("why"):
                out.append(f"   why: {r['why']}")
            if r.get("speed"):
                out.append(f"   speedup over eager (steady state): {_speed(r)}")
        elif r.get("patch"):
            out += ["   patch (not tried):", *("     " + ln for ln in r["patch"].rstrip("\n").split("\n"))]
    t = result.get("together")
    if t:
        out.append(
            f"together ({', '.join(t['fixes'])}): [{t['verdict']}] {_change(t['before'], t['after'])}; "
            f"outputs equal: {_equal(t)}"
        )
    return out


def render_text(result: dict) -> str:
    head = "fxlens fix: " + (
        "interrupted; the fixes measured so far"
        if result.get("interrupted")
        else "each fix tried in a re-run"
    )
    base = result.get("base") or {}
    lines = [head]
    if base.get("measures"):
        lines.append(f"first run: {_change(base['measures'], None)}")
    lines += fix_lines(result)
    load = result.get("load") or {}
    if load.get("average") is not None:
        lines.append(
            f"(load average {load['average']} on {load.get('cores')} cores: compile seconds vary with it)"
        )
    if result.get("session"):
        lines.append(f"session: {result['session']}")
    return "\n".join(lines) + "\n"
