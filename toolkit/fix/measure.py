"""What one run of `fxlens fix` measured, the comparison of two runs' outputs, and the verdict.

Measures come from the run's own session (torch's structured trace): graphs, graph breaks,
recompiles, and cold compile seconds as torch's compilation metrics count them (Dynamo and
backend, forward and backward, every rank). The verdict compares a re-run with the original on
the measure its fix is meant to improve (fxlens.report.fixes: target); a re-run whose compiled
outputs differ is "changes results", never "helps".
"""

from __future__ import annotations

import os

from fxlens.report.build import build_report
from fxlens.trace.session import Session

# a compile-time change smaller than this share (or than MIN_COMPILE_S) is noise on a busy machine
COMPILE_S_SHARE = 0.2
MIN_COMPILE_S = 0.3
# (rtol, atol) per dtype when comparing the compiled outputs of two runs: two compiles of the same
# code may order a reduction differently (dynamic vs static shapes, one graph vs two)
TOLERANCE = {
    "torch.float64": (1e-7, 1e-7),
    "torch.float32": (1e-4, 1e-5),
    "torch.float16": (1e-2, 1e-3),
    "torch.bfloat16": (2e-2, 1e-2),
}


# the measures of a run that compiled nothing (torch wrote no trace)
NOTHING = {"graphs": 0, "breaks": 0, "recompiles": 0, "compile_s": 0.0, "limit_hits": 0}


def measures(session: Session) -> tuple[dict, dict]:
    """`({graphs, breaks, recompiles, compile_s}, report)` of one run's session."""
    report = build_report(session, with_guards=False)
    secs = [(m.total_s or 0.0) + (m.backward_s or 0.0) for m in session.metrics]
    return {
        "graphs": len(report["graphs"]),
        "breaks": sum(b["count"] for b in report["graph_breaks"]),
        "recompiles": len(report["recompiles"]),
        "compile_s": round(sum(secs), 3),
        "limit_hits": len(report["recompile_limit_hits"]),
    }, report


def load_outputs(path: str | os.PathLike) -> dict | None:
    """What the recorder saved: `{outputs: {site: [[tensor, ...] per call]}, calls: {site: n}}`."""
    import torch

    try:
        return torch.load(path, weights_only=True)
    except Exception:  # noqa: BLE001 - a run that died before exit saved nothing
        return None


def _close(a, b) -> bool:
    import torch

    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if not (a.is_floating_point() or a.is_complex()):
        return bool(torch.equal(a, b))
    rtol, atol = TOLERANCE.get(str(a.dtype), (1e-4, 1e-5))
    return bool(torch.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True))


def compare_outputs(before: dict | None, after: dict | None) -> tuple[bool | None, str]:
    """(equal, how): the compiled calls both runs made, compared call by call within the dtype's
    tolerance; None when there is nothing in common to compare."""
    if not before or not after:
        return None, "no outputs recorded"
    compared = 0
    for site, calls in (after.get("outputs") or {}).items():
        ref = (before.get("outputs") or {}).get(site)
        if not ref:
            continue
        for n, (xs, ys) in enumerate(zip(ref, calls, strict=False)):
            if len(xs) != len(ys):
                return False, f"call {n + 1} of {_site(site)} returned {len(ys)} tensors, not {len(xs)}"
            for x, y in zip(xs, ys, strict=True):
                if not _close(x, y):
                    return False, f"call {n + 1} of {_site(site)} differs beyond the {x.dtype} tolerance"
            compared += 1
    if not compared:
        return None, "no compiled call in common"
    return True, f"{compared} compiled call(s) equal within the dtype's tolerance"


def _site(key: str) -> str:
    file, line, _ = key.rsplit(":", 2)
    return f"the object compiled at {os.path.basename(file)}:{line}"


def calls(outputs: dict | None) -> int:
    return sum((outputs or {}).get("calls", {}).values())


def verdict(
    targets: list[str], before: dict, after: dict, outputs_equal: bool | None, failed: str = ""
) -> tuple[str, str]:
    """(verdict, why): helps | no effect | hurts | changes results, on the measures the fix targets
    (helps when one improves and none gets worse)."""
    if failed:
        return "hurts", failed
    if outputs_equal is False:
        return "changes results", "the compiled outputs differ from the original run's"
    if (
        not after.get("graphs")
        and not after.get("compile_s")
        and (before.get("graphs") or before.get("compile_s"))
    ):
        # fewer breaks or recompiles because nothing compiles any more is not a fix
        return "hurts", "the re-run compiled nothing: the fix took the code out of torch.compile"
    said = [_one(t, before, after) for t in targets]
    for word in ("hurts", "helps"):
        if any(v == word for v, _ in said):
            return word, "; ".join(why for v, why in said if v == word)
    return "no effect", "; ".join(why for _, why in said)


def _one(target: str, before: dict, after: dict) -> tuple[str, str]:
    b, a = before.get(target), after.get(target)
    if b is None or a is None:
        return "no effect", f"{target} not measured"
    if target == "graphs":  # compiling what never ran: helps when graphs appear
        if a > b:
            return "helps", f"{b} -> {a} graphs"
        return "no effect", f"graphs {b} -> {a}"
    if target == "compile_s":
        small = max(COMPILE_S_SHARE * b, MIN_COMPILE_S)
        if a < b - small:
            return "helps", f"compile {b:.2f} s -> {a:.2f} s"
        if a > b + small:
            return "hurts", f"compile {b:.2f} s -> {a:.2f} s"
        return "no effect", f"compile {b:.2f} s -> {a:.2f} s (within noise)"
    if a < b:
        # fewer recompiles bought with more graph breaks is a trade, not a fix
        worse = [k for k in ("breaks", "recompiles") if k != target and after.get(k, 0) > before.get(k, 0)]
        if worse:
            return "hurts", f"{target} {b} -> {a}, but {worse[0]} {before[worse[0]]} -> {after[worse[0]]}"
        return "helps", f"{target} {b} -> {a}"
    if a > b:
        return "hurts", f"{target} {b} -> {a}"
    return "no effect", f"{target} {b} -> {a}"
