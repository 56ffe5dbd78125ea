"""Budgets against a capture: count what torch compiled, and describe each excess item as the report does.

Counting and wording both come from the existing layers: the capture is written as a TORCH_TRACE log,
opened as a `Session` (`fxlens.trace`) and summarised by `build_report` (`fxlens.report`), so a graph
break here is located, explained and fixed with the same words `fxlens report` prints.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from fxlens.budget.collect import Capture, scratch_dir
from fxlens.budget.memory import failure_lines as memory_failure_lines
from fxlens.budget.memory import mib, parse_bytes
from fxlens.report.build import build_report
from fxlens.report.counts import COUNTED, report_counts
from fxlens.trace.breaks import is_eager_frame
from fxlens.trace.compileclock import clock, judge
from fxlens.trace.graph_code import op_name
from fxlens.trace.session import Session
from fxlens.trace.userframes import location, short_path

# The budgets, in the order a failure lists them. Each is an upper bound ("at most N"). Counted as
# the report counts (fxlens.report.counts): a break torch could not resume is an eager frame.
KINDS = COUNTED


@dataclass(frozen=True)
class Limits:
    """Upper bounds per kind (None: not checked); `exact` makes each given bound an exact count."""

    graphs: int | None = None
    graph_breaks: int | None = None
    recompiles: int | None = None
    kernels: int | None = None
    fallbacks: int | None = None
    eager_frames: int | None = None
    exact: bool = False
    # seconds of compiling, judged on the compiling thread's CPU clock with a band for the load
    # (fxlens.trace.compileclock); never exact
    compile_s: float | None = None
    # bytes of tensors at their peak above the block's start (fxlens.budget.memory); "64MiB" too
    peak_memory: int | str | None = None

    def __post_init__(self) -> None:
        for kind in KINDS:
            v = getattr(self, kind)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
                raise ValueError(f"compile budget {kind}={v!r}: expected a non-negative int or None")
        v = self.compile_s
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | float) or not v > 0):
            raise ValueError(f"compile budget compile_s={v!r}: expected a positive number of seconds or None")
        if self.peak_memory is not None:
            object.__setattr__(self, "peak_memory", parse_bytes(self.peak_memory))

    def given(self) -> dict[str, int]:
        """The bounds that were set, by kind."""
        return {k: getattr(self, k) for k in KINDS if getattr(self, k) is not None}

    def bounds(self) -> dict[str, int]:
        """The bounds checked: those given, and with a `graph_breaks` budget, no frame run eagerly
        unless `eager_frames` is given (a break torch gave up on is at least as bad as a break:
        counting it apart, as the report does, must not let it pass a break budget)."""
        out = self.given()
        if self.graph_breaks is not None and self.eager_frames is None:
            out["eager_frames"] = 0
        return out

    def describe(self) -> str:
        op = "==" if self.exact else "<="
        said = [f"{k}{op}{v}" for k, v in self.given().items()]
        said += [f"compile_s<={self.compile_s:g}"] if self.compile_s is not None else []
        said += [f"peak_memory<={mib(self.peak_memory)}"] if self.peak_memory is not None else []
        return ", ".join(said) or "no limits"


@dataclass
class Outcome:
    """What a capture held: counts per kind, the budgets it broke, and the report dict (built only
    when a budget is broken; empty otherwise)."""

    counts: dict[str, int]
    report: dict
    broken: list[str] = field(default_factory=list)  # kinds over (or, exact, not at) their bound
    # with a compile_s budget: fxlens.trace.compileclock.judge's verdict, and the clock's compiles
    compile: dict | None = None
    # with a peak_memory budget: the block's measured peaks (fxlens.budget.memory.PeakMemory)
    memory: dict | None = None

    @property
    def ok(self) -> bool:
        return not self.broken


def counts_of(session: Session) -> dict[str, int]:
    """Counts per kind, as the report counts them: `report_counts` of the session's report."""
    return report_counts(build_report(session, with_guards=False))


def quick_counts(records: list) -> dict[str, int]:
    """The counts of `counts_of`, from the captured records' metadata alone (no log written or read).

    The same rules as `fxlens.trace.model`: a graph per compile id with a `dynamo_output_graph`
    (restarts folded), a break / recompile / kernel per artifact record that names its compile, and
    fallbacks summed from each `fxlens_fallbacks` payload. This is what keeps a passing budget
    cheap; a broken one is re-counted by the reader itself (`evaluate`), and a test checks
    that both agree.
    """
    graphs: set[tuple] = set()
    counts = dict.fromkeys(KINDS, 0)
    artifact_kind = {"dynamo_graph_break_reason": "graph_breaks", "recompile_reasons": "recompiles"}
    for rec in records:
        meta = getattr(rec, "metadata", None) or {}
        if "frame_id" not in meta:
            continue  # the model ignores records of no compile, and so do we
        if "dynamo_output_graph" in meta:
            graphs.add((meta.get("rank"), meta["frame_id"], meta.get("frame_compile_id")))
        elif "artifact" in meta:
            name = (meta["artifact"] or {}).get("name")
            if name == "dynamo_graph_break_reason" and is_eager_frame(_text(getattr(rec, "payload", None))):
                counts["eager_frames"] += 1  # torch gave up on the frame: the report's eager frame
            elif name in artifact_kind:
                counts[artifact_kind[name]] += 1
            elif name == "fxlens_kernel":
                counts["kernels"] += 1
            elif name == "fxlens_fallbacks":
                counts["fallbacks"] += _fallback_total(getattr(rec, "payload", None))
    counts["graphs"] = len(graphs)
    return counts


def _text(payload) -> str:
    # torch passes a break's payload as a string, or a callable that makes it (lazy payloads)
    try:
        return str(payload() if callable(payload) else payload or "")
    except Exception:  # noqa: BLE001 -- a payload that cannot be built is no eager frame
        return ""


def _fallback_total(payload) -> int:
    try:
        ops = json.loads(payload or "{}").get("ops") or {}
        return sum(int(n) for n in ops.values())
    except (ValueError, TypeError, AttributeError):
        return 0


def _broken(counts: dict[str, int], limits: Limits) -> list[str]:
    return [
        k
        for k, bound in limits.bounds().items()
        if (counts[k] != bound if limits.exact else counts[k] > bound)
    ]


def full_report(cap: Capture) -> tuple[dict[str, int], dict]:
    """Counts and report dict of `cap`, read through the trace reader and the report."""
    tmp = scratch_dir()
    try:
        session = Session.open(cap.write_log(tmp, complete=False))
        report = build_report(session, with_guards=False)  # payloads read now
        return report_counts(report), report
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


LOST = (
    "fxlens could not measure this compile budget: logging was reconfigured while it ran "
    "(`logging.config.dictConfig` disables torch's trace logger, or its handlers were removed), "
    "which silenced the handler that counts compiles; configure logging before the budgeted code"
)


def evaluate(cap: Capture, limits: Limits, memory: dict | None = None) -> Outcome:
    """Compare `cap` (and `memory`, the block's measured peaks) to `limits`; when a budget is
    broken, describe it through the reader and report.

    Raises:
        RuntimeError: the capture lost its handler midway (`LOST`): its counts would be too low.
    """
    if cap.lost:
        raise RuntimeError(LOST)
    counts = quick_counts(cap.records)
    timing = compile_timing(cap.records, limits.compile_s)
    slow = ["compile_s"] if timing and timing["over"] else []
    if limits.peak_memory is not None and memory is None:
        raise RuntimeError("fxlens could not measure the peak_memory budget: the block was not profiled")
    big = (
        ["peak_memory"]
        if memory and limits.peak_memory is not None and memory["peak"] > limits.peak_memory
        else []
    )
    if not _broken(counts, limits) and not slow and not big:
        return Outcome(counts, {}, [], timing, memory)
    counts, report = full_report(cap)
    return Outcome(counts, report, _broken(counts, limits) + slow + big, timing, memory)


def compile_timing(records: list, budget_s: float | None) -> dict | None:
    """The compiles' CPU seconds against `budget_s` (None: no compile_s budget)."""
    if budget_s is None:
        return None
    clk = clock(records)
    return {**judge(budget_s, clk), "compiles": clk.compiles, "load": clk.load, "cores": clk.cores}


def _hint(hints: list[str]) -> str:
    useful = [h for h in hints if "report an issue" not in h and "github.com" not in h]
    return useful[0] if useful else ""


def _breaks(report: dict) -> list[str]:
    out = []
    for b in report["graph_breaks"]:
        times = f" (x{b['count']})" if b["count"] > 1 else ""
        out.append(f"  {location(b['file'], b['line'])}  in {b['function']}: {b['reason']}{times}")
        if b["source"]:
            out.append(f"      {b['source']}")
        if b["explanation"]:
            out.append(f"      why: {b['explanation'][:300]}")
        if hint := _hint(b["hints"]):
            out.append(f"      fix: {hint[:300]}")
    return out


def _recompiles(report: dict) -> list[str]:
    out = []
    for c in report["recompile_causes"]:
        times = f" (x{c['count']})" if c["count"] > 1 else ""
        out.append(f"  {location(c['file'], c['line'])}  in {c['function']}: {c['message']}{times}")
        out.append(f"      fix: {c['fix']}")
    explained = sum(c["count"] for c in report["recompile_causes"])
    if explained < len(report["recompiles"]):  # causes the rules do not classify: show the raw guards
        for r in report["recompiles"]:
            guards = "; ".join(r["failed_guards"][:2]) or "no failed guard logged"
            out.append(
                f"  {location(r['file'], r['line'])}  in {r['function']} [{r['compile_id']}]: {guards}"
            )
    return out


def _graphs(report: dict, listed: frozenset = frozenset()) -> list[str]:
    """Each graph, then the breaks and recompiles behind the extra ones (unless `listed` in their own block)."""
    out = []
    for g in report["graphs"]:
        ops = ", ".join(op_name(o) for o in g["ops"][:6]) + (" ..." if len(g["ops"]) > 6 else "")
        out.append(
            f"  {location(g['file'], g['line'])}  in {g['function']} [{g['compile_id']}]: {g['num_ops']} ops ({ops})"
        )
    if report["graph_breaks"] or report["recompiles"]:
        out.append("      fix: every graph break and every recompile adds a graph; these are here:")
        if "graph_breaks" in listed:
            out.append("  (the graph breaks: see graph_breaks)")
        else:
            out += _breaks(report)
        if "recompiles" in listed:
            out.append("  (the recompiles: see recompiles)")
        else:
            out += _recompiles(report)
    return out


def _graph_where(report: dict) -> dict[str, str]:
    """compile id -> "file:line  in function" of the user's code that graph came from."""
    return {
        g["compile_id"]: f"{location(g['file'], g['line'])}  in {g['function']}" for g in report["graphs"]
    }


def _kernels(report: dict) -> list[str]:
    where = _graph_where(report)
    per: dict[tuple, list[dict]] = defaultdict(list)
    for k in report["kernels"]:
        per[(k["compile_id"], k["graph"])].append(k)
    out = []
    for (cid, graph), ks in per.items():
        out.append(f"  {where.get(cid, '?')} [{cid}] {graph}: {len(ks)} kernel(s)")
        for k in ks[:8]:
            ops = ", ".join(dict.fromkeys(o.split(".")[1] if "." in o else o for o in k["ops"]))
            out.append(f"      {k['name']}: {ops}")
        if len(ks) > 8:
            out.append(f"      ... {len(ks) - 8} more")
    out.append(
        "      fix: `fxlens report`/`fxlens tui` on the session show each fusion decision and why two "
        "kernels were not fused; a graph break or recompile adds kernels for its graphs"
    )
    return out


def _fallbacks(report: dict) -> list[str]:
    where = _graph_where(report)
    per: Counter = Counter()
    for f in report["fallbacks"]:
        per[(f["compile_id"], f["op"])] += f["count"]
    out = [f"  {where.get(cid, '?')} [{cid}]: {op} x{n}" for (cid, op), n in per.items()]
    out.append(
        "      fix: fxlens's backend runs these ops as ATen calls (matmul, convolution and attention by "
        "design; see docs/backend.md); raise the budget, or express the op with ones it lowers"
    )
    return out


def _eager_frames(report: dict) -> list[str]:
    """Each frame torch gave up on, worded as the report's eager-frame headline."""
    out = []
    for e in report.get("eager_frames") or []:
        out.append(
            f"  {location(e['file'], e['line'])}  in {e['function']} [{e['compile_id']}]: runs eagerly from here on: "
            f"torch could not resume after `{e['reason']}`"
        )
        if e.get("source"):
            out.append(f"      {e['source']}")
    out.append(
        "      fix: move that call out of the compiled function (or out of the with/try block it is in, "
        "which torch cannot resume a graph across)"
    )
    return out


_DESCRIBE = {
    "graphs": _graphs,
    "graph_breaks": _breaks,
    "eager_frames": _eager_frames,
    "recompiles": _recompiles,
    "kernels": _kernels,
    "fallbacks": _fallbacks,
}


def failure_message(outcome: Outcome, limits: Limits, where: str = "") -> str:
    """One block per broken budget: the count against its bound, then each item with file:line, reason, fix."""
    op = "!=" if limits.exact else ">"
    bounds = limits.bounds()
    t = outcome.compile or {}
    head = ", ".join(
        f"compile_s {t['cpu_s']:.2f} > {limits.compile_s:g}"
        if k == "compile_s"
        else f"peak_memory {mib(outcome.memory['peak'])} > {mib(limits.peak_memory)}"
        if k == "peak_memory"
        else f"{k} {outcome.counts[k]} {op} {bounds[k]}"
        for k in outcome.broken
    )
    lines = [f"compile budget exceeded{(' in ' + where) if where else ''}: {head}"]
    for kind in outcome.broken:
        if kind == "compile_s":
            lines += _compile_seconds(outcome, limits)
            continue
        if kind == "peak_memory":  # what it measured, then what compiled in the block
            lines += memory_failure_lines(outcome.memory, limits.peak_memory) + _graphs(outcome.report)
            continue
        bound = bounds[kind]
        n = outcome.counts[kind]
        want = f"exactly {bound}" if limits.exact else f"at most {bound}"
        if kind == "eager_frames" and limits.eager_frames is None:
            want += ", as the graph_breaks budget is given: pass eager_frames=N to allow some"
        lines.append(f"{kind}: {n} (budget: {want})")
        if n == 0:
            lines.append(
                "  nothing of this kind was compiled here: was the code compiled before the block? "
                "(`reset=True` starts from a fresh torch._dynamo cache)"
            )
            continue
        if kind == "graphs":
            lines += _graphs(outcome.report, frozenset(outcome.broken))
        else:
            lines += _DESCRIBE[kind](outcome.report)
    return "\n".join(lines)


def _compile_seconds(outcome: Outcome, limits: Limits) -> list[str]:
    """What the compile_s budget measured, the band it allowed, and the slowest compiles."""
    t = outcome.compile or {}
    lines = [
        f"compile_s: {t['cpu_s']:.2f} s on the compiling thread's CPU over {t['compiles']} compile(s), "
        f"{t['wall_s']:.2f} s wall (budget: at most {limits.compile_s:g} s, +{t['band']:.0%} for the load: "
        f"the thread ran {t['share']:.0%} of the wall time; load {t['load']} on {t['cores']} cores)"
    ]
    per = (outcome.report.get("compile_times") or {}).get("per_compile") or []
    for m in sorted(per, key=lambda m: -(m.get("total_s") or 0))[:3]:
        lines.append(
            f"  {m['compile_id']} {m['function']} ({location(m['file'], m['line'])}): {m['total_s'] or 0:.2f} s wall"
        )
    return lines


def summary(counts: dict[str, int]) -> str:
    return ", ".join(f"{k}={counts[k]}" for k in KINDS)


def session_line(path: Path) -> str:
    """The line a failure ends with: where its session is, and the commands that open it."""
    p = short_path(str(path))
    return f"fxlens session: {p}  (fxlens report {p}  |  fxlens tui {p})"


def session_name(text: str) -> str:
    """A file-name-safe session name from a test id or label."""
    keep = "".join(c if c.isalnum() or c in "-_." else "-" for c in text)
    return "-".join(p for p in keep.split("-") if p)[:120] or "budget"


def unique_dir(root: Path, name: str) -> Path:
    path, n = root / name, 1
    while path.exists():
        n += 1
        path = root / f"{name}-{n}"
    return path
