"""Inside one graph compiled by fxlens's own backend: which kernel, and which fusion decision.

Uses the backend's switches (declared in `fxlens.backend.config`): FXLENS_KERNEL_FALLBACK runs the
listed kernels as their ATen ops, FXLENS_FUSION_LIMIT applies only the first N fusion decisions of
each ATen graph, FXLENS_CHECK_KERNELS logs each kernel's error against an fp64 ATen replay
(`fxlens_kernel_check`). Kernels are read from the run's trace (`fxlens_kernel` artifacts).
"""

from __future__ import annotations

import re

from fxlens.bisect.ladder import first_failing, narrow
from fxlens.bisect.runs import Outcome, Runs
from fxlens.errors import FxlensError

_KERNEL_NAME = re.compile(r"\bfxk_[A-Za-z0-9_]+")
_OP_IN_ERROR = re.compile(r"\(op ([\w.]+)")
ENV_FALLBACK = "FXLENS_KERNEL_FALLBACK"
ENV_FUSION_LIMIT = "FXLENS_FUSION_LIMIT"
ENV_CHECK_KERNELS = "FXLENS_CHECK_KERNELS"


def _artifacts(out: Outcome, compile_id: str, name: str) -> list[dict]:
    """The JSON payloads of one artifact kind logged for `compile_id` in a run's trace."""
    try:
        session = out.session()
    except FxlensError:
        return []
    found = []
    for rec in session.records(compile_id):
        if rec.kind == f"artifact:{name}":
            data = rec.payload_json()
            if isinstance(data, dict):
                found.append(data)
    return found


def kernel_checks(out: Outcome, names: list[str]) -> list[dict]:
    """Failed FXLENS_CHECK_KERNELS replays of kernels named `names`, in order.

    Kernels run (and log their checks) outside any compile, so the records carry no compile id:
    they are matched by kernel name, a guess the caller confirms with a run.
    """
    from fxlens.trace.reader import iter_records

    try:
        logs = out.session().logs
    except FxlensError:
        return []
    found = []
    for log in logs:
        for rec in iter_records(log):
            if rec.kind == "artifact:fxlens_kernel_check":
                data = rec.payload_json()
                if isinstance(data, dict) and data.get("ok") is False and data.get("name") in names:
                    found.append(data)
    return found


def kernels_of(out: Outcome, compile_id: str) -> list[dict]:
    """The fxlens kernels of one compile, in the order the backend logged them (forward, backward)."""
    seen: dict[str, dict] = {}
    for k in _artifacts(out, compile_id, "fxlens_kernel"):
        seen.setdefault(str(k.get("name")), k)
    return list(seen.values())


def find_kernel(
    runs: Runs, confirm: Outcome, stage: str, good: str, ordinal: int, compile_id: str, kind: str
) -> dict | None:
    """Narrow the failure of graph `ordinal` to one kernel: the others run as ATen ops.

    The first guess is free: the kernel an error message names, or the first kernel whose
    FXLENS_CHECK_KERNELS replay diverged. Without kernel records (a crash while compiling the
    kernels logs none) the kernel the error names is reported as is.
    """
    records = kernels_of(confirm, compile_id)
    checks = kernel_checks(confirm, [str(k.get("name")) for k in records])
    named = _KERNEL_NAME.search(confirm.error or "")
    hint_name = named.group(0) if named else (checks[0].get("name") if checks else None)
    if not records:
        if not hint_name:
            return None
        op = _OP_IN_ERROR.search(confirm.error or "")
        return {
            "name": hint_name,
            "ops": [op.group(1)] if op else [],
            "source_path": None,
            "how": "named by the error (no kernel records: the graph did not finish compiling)",
        }
    names = [str(k.get("name")) for k in records]
    hint = names.index(hint_name) if hint_name in names else None

    def reproduces(lo: int, hi: int) -> bool:
        fallback = [n for i, n in enumerate(names) if not lo <= i <= hi]
        label = (
            f"{stage} graph {ordinal} kernel {lo}"
            if lo == hi
            else f"{stage} graph {ordinal} kernels {lo}-{hi}"
        )
        out = runs.run(
            label, stage=stage, good=good, graphs=str(ordinal), env={ENV_FALLBACK: ",".join(fallback)}
        )
        return out.kind == kind

    found = narrow(len(names), reproduces, hint)
    if found.single is None:
        return {"name": None, "candidates": names[found.lo : found.hi + 1], "ops": None, "source_path": None}
    rec = records[found.single]
    check = next((c for c in checks if c.get("name") == rec.get("name")), None)
    return {
        "name": rec.get("name"),
        "graph": rec.get("graph"),
        "ops": list(rec.get("ops") or []),
        "source_path": rec.get("source_path"),
        "max_abs_err": check.get("max_abs_err") if check else None,
        "max_rel_err": check.get("max_rel_err") if check else None,
        "of": len(names),
        "how": "confirmed: only this kernel compiled, the others as ATen ops, still fails",
    }


def find_fusion(
    runs: Runs,
    confirm: Outcome,
    stage: str,
    good: str,
    ordinal: int,
    compile_id: str,
    kind: str,
    graph_kind: str | None = None,
) -> dict | None:
    """The first fusion decision whose application makes graph `ordinal` fail (FXLENS_FUSION_LIMIT).

    With no fusions applied the graph is as in the unfused stage, known good; with all applied it
    fails; the limit is bisected in between. The limit applies to the forward and the backward
    graph alike; `graph_kind` (the culprit kernel's graph) says whose decision to report.
    """
    per_graph = {
        str(f.get("graph")): list(f.get("decisions") or [])
        for f in _artifacts(confirm, compile_id, "fxlens_fusion")
    }
    total = max((len(d) for d in per_graph.values()), default=0)
    if total == 0:
        return None

    def fails(limit: int) -> bool:
        out = runs.run(
            f"{stage} graph {ordinal} fusions 1-{limit}",
            stage=stage,
            good=good,
            graphs=str(ordinal),
            env={ENV_FUSION_LIMIT: str(limit)},
        )
        return out.kind == kind

    k = first_failing(total, fails)
    if k is None:
        return None
    hits = [(g, d[k - 1]) for g, d in per_graph.items() if len(d) >= k]
    hits.sort(key=lambda h: h[0] != graph_kind)  # the culprit kernel's graph first
    graph, decision = hits[0]
    verb = "fuse" if decision.get("fused") else "keep apart"
    detail = (
        f"{verb} {decision.get('a')} + {decision.get('b')} ({decision.get('reason')}) in the {graph} graph"
    )
    return {
        "decision": k,
        "of": total,
        "graph": graph,
        "detail": detail,
        **{x: decision.get(x) for x in ("a", "b", "fused", "reason")},
    }
