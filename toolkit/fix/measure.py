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

# a compile-time change smaller than this share (or than MIN_COMPILE_S) is noise on a quiet machine;
# the share grows with the load (runnable tasks per core): on 2 cores at a load of 9, two runs of
# the same Llama script compiled in 10.8 s and 15.1 s
COMPILE_S_SHARE = 0.2
MIN_COMPILE_S = 0.3


def _load_per_core() -> float:
    try:
        with open("/proc/loadavg") as f:
            load = float(f.read().split()[0])
        return load / max(1, os.cpu_count() or 1)
    except (OSError, ValueError, IndexError):
        return 1.0


def compile_noise(before_s: float, load_per_core: float | None = None) -> float:
    """Seconds of compile time two runs of the same script may differ by at this load."""
    busy = max(1.0, _load_per_core() if load_per_core is None else load_per_core)
    return max(COMPILE_S_SHARE * busy * before_s, MIN_COMPILE_S)


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


# a difference within LOOSE times the dtype's tolerance is the drift of a reordered reduction or a
# dynamic-shape kernel (a BatchNorm eval call under dynamic shapes drifts by 4.6e-4), not a wrong answer
LOOSE = 10.0


def _difference(a, b) -> dict | None:
    """None when A and B agree within the dtype's tolerance, else how far apart they are:
    `{max_abs, max_rel, within_loose}` (integers and bools compare exactly: within_loose False)."""
    import torch

    if a.shape != b.shape or a.dtype != b.dtype:
        return {
            "max_abs": None,
            "max_rel": None,
            "within_loose": False,
            "what": f"{tuple(b.shape)} {b.dtype} where the reference has {tuple(a.shape)} {a.dtype}",
        }
    if not (a.is_floating_point() or a.is_complex()):
        if torch.equal(a, b):
            return None
        wrong = int((a != b).sum())
        return {
            "max_abs": None,
            "max_rel": None,
            "within_loose": False,
            "what": f"{wrong} of {a.numel()} values differ",
        }
    rtol, atol = TOLERANCE.get(str(a.dtype), (1e-4, 1e-5))
    if torch.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True):
        return None
    x, y = a.double(), b.double()
    diff = (x - y).abs().nan_to_num(nan=float("inf"))
    if (x.isnan() == y.isnan()).all():
        diff = diff.masked_fill(x.isnan() & y.isnan(), 0.0)
    big = float(diff.max())
    rel = float((diff / x.abs().clamp_min(atol)).max())
    loose = bool(torch.allclose(a, b, rtol=rtol * LOOSE, atol=atol * LOOSE, equal_nan=True))
    return {
        "max_abs": big,
        "max_rel": rel,
        "within_loose": loose,
        "what": f"max abs diff {big:.3g} (rel {rel:.3g})",
    }


def first_difference(before: dict | None, after: dict | None) -> tuple[bool | None, dict | None, int]:
    """(equal, the largest difference, calls compared) of the compiled calls both runs made: None
    when nothing is in common; the difference names its call, output and site."""
    if not before or not after:
        return None, None, 0
    compared, worst = 0, None
    for site, calls in (after.get("outputs") or {}).items():
        ref = (before.get("outputs") or {}).get(site)
        if not ref:
            continue
        for n, (xs, ys) in enumerate(zip(ref, calls, strict=False)):
            compared += 1
            if len(xs) != len(ys):
                d = {
                    "max_abs": None,
                    "max_rel": None,
                    "within_loose": False,
                    "what": f"{len(ys)} tensors where the reference has {len(xs)}",
                }
                return False, {**d, "call": n + 1, "output": None, "site": _site(site)}, compared
            for k, (x, y) in enumerate(zip(xs, ys, strict=True)):
                d = _difference(x, y)
                if d is not None and (worst is None or _worse(d, worst)):
                    worst = {**d, "call": n + 1, "output": k + 1, "site": _site(site)}
    if not compared:
        return None, None, 0
    return worst is None, worst, compared


def _worse(d: dict, than: dict) -> bool:
    if than["max_abs"] is None:
        return False
    return d["max_abs"] is None or d["max_abs"] > than["max_abs"]


def describe_difference(d: dict) -> str:
    """`call 2, output 1 of the object compiled at m.py:9: max abs diff 4.6e-4 (rel 1e-3), within 10x
    the float32 tolerance`."""
    where = f"call {d['call']}" + (f", output {d['output']}" if d.get("output") else "")
    loose = f", within {LOOSE:g}x the dtype's tolerance (numerical drift)" if d.get("within_loose") else ""
    return f"{where} of {d['site']}: {d['what']}{loose}"


def compare_outputs(before: dict | None, after: dict | None) -> tuple[bool | None, str]:
    """(equal, how): the compiled calls both runs made, compared call by call within the dtype's
    tolerance; None when there is nothing in common to compare."""
    equal, worst, compared = first_difference(before, after)
    if equal is None:
        return None, "no outputs recorded" if not before or not after else "no compiled call in common"
    if not equal:
        return False, f"differs beyond the dtype's tolerance at {describe_difference(worst)}"
    return True, f"{compared} compiled call(s) equal within the dtype's tolerance"


def _site(key: str) -> str:
    file, line, _ = key.rsplit(":", 2)
    return f"the object compiled at {os.path.basename(file)}:{line}"


def calls(outputs: dict | None) -> int:
    return sum((outputs or {}).get("calls", {}).values())


# peak resident memory changes smaller than this share of the first run's (or MiB) are noise
PEAK_NOISE_SHARE = 0.03
PEAK_NOISE_MIB = 8.0
# the counts a fix must not make worse (besides its target) for "helps"
COUNTS = ("breaks", "recompiles", "limit_hits")


def verdict(
    targets: list[str],
    before: dict,
    after: dict,
    outputs_equal: bool | None,
    failed: str = "",
    not_applied: str = "",
    load: float | None = None,
) -> tuple[str, str]:
    """(verdict, why): not applied | hurts | changes results | helps | trade-off | no effect, on the
    measures the fix targets. helps: a target improved and no other count got worse; trade-off: a
    target improved and another count got worse (both said)."""
    if not_applied:
        return "not applied", not_applied
    if failed:
        return "hurts", failed
    if outputs_equal is False:
        return "changes results", "the compiled outputs differ from eager's beyond the dtype's tolerance"
    if (
        not after.get("graphs")
        and not after.get("compile_s")
        and (before.get("graphs") or before.get("compile_s"))
    ):
        # fewer breaks or recompiles because nothing compiles any more is not a fix
        return "not applied", "the re-run compiled nothing: the fix took the code out of torch.compile"
    said = [_one(t, before, after, load) for t in targets]
    better = [why for v, why in said if v == "helps"]
    worse = [why for v, why in said if v == "hurts"]
    if "graphs" not in targets:  # compiling what never ran brings its breaks and seconds with it
        others = [k for k in COUNTS if k not in targets]
        worse += [
            f"{k} {before.get(k, 0)} -> {after.get(k, 0)}"
            for k in others
            if after.get(k, 0) > before.get(k, 0)
        ]
        # fewer compiles should cost fewer seconds; a removed break compiles more code per graph
        if (
            set(targets) <= {"recompiles", "limit_hits"}
            and _one("compile_s", before, after, load)[0] == "hurts"
        ):
            worse.append(_one("compile_s", before, after, load)[1])
    if better and worse:
        return "trade-off", f"{'; '.join(better)}, but {'; '.join(worse)}"
    if better:
        return "helps", "; ".join(better)
    if worse:
        return "hurts", "; ".join(worse)
    return "no effect", "; ".join(why for _, why in said)


def _one(target: str, before: dict, after: dict, load: float | None = None) -> tuple[str, str]:
    b, a = before.get(target), after.get(target)
    if b is None or a is None:
        return "no effect", f"{target} not measured"
    if target == "graphs":  # compiling what never ran: helps when graphs appear
        if a > b:
            return "helps", f"{b} -> {a} graphs"
        return "no effect", f"graphs {b} -> {a}"
    if target == "peak_memory":  # MiB; two runs of one script differ by a few MiB
        small = max(PEAK_NOISE_SHARE * b, PEAK_NOISE_MIB)
        if a < b - small:
            return "helps", f"peak memory {b:.0f} -> {a:.0f} MiB"
        if a > b + small:
            return "hurts", f"peak memory {b:.0f} -> {a:.0f} MiB"
        return "no effect", f"peak memory {b:.0f} -> {a:.0f} MiB (within noise)"
    if target == "compile_s":
        small = compile_noise(b, load)
        # under load one run is up to (1 + share x load) times slower than another, either way: a
        # fall is judged on that ratio (as a difference the band passes 100% of the first run at a
        # load of 5 per core, and no fall could ever be seen: DETR's regional compile, 124 s -> 7 s)
        slower = 1 + small / b if b else 1.0
        if b - a > MIN_COMPILE_S and a * slower < b:
            return "helps", f"compile {b:.2f} s -> {a:.2f} s"
        if a > b + small:
            return "hurts", f"compile {b:.2f} s -> {a:.2f} s"
        return "no effect", (
            f"compile {b:.2f} s -> {a:.2f} s (within the noise at this load: -{b - b / slower:.2f} s / +{small:.2f} s)"
        )
    if a < b:
        return "helps", f"{target} {b} -> {a}"
    if a > b:
        return "hurts", f"{target} {b} -> {a}"
    return "no effect", f"{target} {b} -> {a}"
