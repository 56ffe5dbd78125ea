"""What ranks of one job did at run time, compared: the collectives inductor scheduled in each graph
(a rank that issues other collectives, or in another order, waits forever: a hang), whether the
output code calls every collective it scheduled and waits on each (collectives parity), inductor's
runtime estimates and tensor metadata per graph, and the order the compiled graphs ran in.

Everything here is read from torch's own records (fxlens.trace.kinds): `inductor_collective_schedule`,
`inductor_runtime_and_tensor_meta`, `graph_execution`, and the `inductor_output_code` payloads.
"""

from __future__ import annotations

import re
from collections import Counter

from fxlens.report.document import Line, Section
from fxlens.report.ranks import rank_ranges
from fxlens.trace.graph_code import op_name

# `torch.ops._c10d_functional.all_reduce_.default(` in output code (tlparse's pattern), comments out
_CALL = re.compile(r"torch\s*\.\s*ops\s*\.\s*_?c10d_functional\s*\.\s*(\w+)\s*\.\s*default\s*\(")
_COMMENT = re.compile(r"#.*$", re.M)
# collectives by family, the names tlparse counts by (an in-place `all_reduce_` is an all_reduce)
_FAMILIES = ("all_reduce", "reduce_scatter", "all_gather", "broadcast", "all_to_all")


def _family(op: str) -> str | None:
    op = op_name(op).rstrip("_")
    fam = next((f for f in _FAMILIES if f in op), None)
    return fam or ("reduce" if "reduce" in op else None)


def _sequences(session) -> dict:
    """rank -> [(compile id, ops)] in the order the rank compiled them."""
    return {r.rank: [(c.compile_id, c.ops) for c in r.collectives] for r in session.ranks if r.collectives}


def collective_schedules(session) -> dict:
    """Ranks grouped by the collectives they issue, and where an outlier's sequence parts from the
    reference (the largest group): the compile, the position and both ops. A hang risk: a
    collective is matched across ranks by its position, so a rank that issues another op there
    waits for a peer that never comes."""
    seqs = _sequences(session)
    groups: dict[tuple, list] = {}
    for rank, seq in seqs.items():
        groups.setdefault(tuple(seq), []).append(rank)
    order = sorted(
        groups.items(), key=lambda kv: (-len(kv[1]), min(r if r is not None else -1 for r in kv[1]))
    )
    out = {
        "per_rank": [
            {"rank": rank, "graphs": [{"compile_id": c, "ops": list(ops)} for c, ops in seq]}
            for rank, seq in seqs.items()
        ],
        "groups": [{"ranks": ranks, "ranges": rank_ranges(ranks)} for _, ranks in order],
        "divergences": [],
    }
    if len(order) < 2:
        return out
    ref_seq, ref_ranks = order[0]
    for seq, ranks in order[1:]:
        out["divergences"].append({"ranks": ranks, "reference_ranks": ref_ranks, **_parting(seq, ref_seq)})
    return out


def _parting(mine: tuple, ref: tuple) -> dict:
    """The first compile and collective where a rank's sequence leaves the reference's."""
    flat_mine = [(c, i, op) for c, ops in mine for i, op in enumerate(ops)]
    flat_ref = [(c, i, op) for c, ops in ref for i, op in enumerate(ops)]
    for k in range(max(len(flat_mine), len(flat_ref))):
        a = flat_mine[k] if k < len(flat_mine) else None
        b = flat_ref[k] if k < len(flat_ref) else None
        if a is not None and b is not None and a[2] == b[2]:
            continue
        where = a or b
        return {
            "compile_id": where[0],
            "position": k + 1,  # 1-based, over the rank's whole sequence
            "op": op_name(a[2]) if a else None,
            "expected": op_name(b[2]) if b else None,
        }
    return {"compile_id": None, "position": None, "op": None, "expected": None}


def _who(ranks: list) -> str:
    return f"rank {rank_ranges(ranks)}" if len(ranks) == 1 else f"ranks {rank_ranges(ranks)}"


def schedule_section(report: dict) -> list[Section]:
    """Collectives per rank group, and each divergence named as the hang risk it is."""
    cs = (report.get("distributed") or {}).get("collective_schedules") or {}
    if not cs.get("per_rank"):
        return []
    out = Section("Collectives", gloss="inductor's schedule, per rank")
    groups = cs.get("groups") or []
    first = cs["per_rank"][0]
    n_ops = sum(len(g["ops"]) for g in first["graphs"])
    if len(cs["per_rank"]) == 1:
        out.lines.append(
            Line(f"{_who([first['rank']])} issues {n_ops} collective(s) in {len(first['graphs'])} graph(s)")
        )
    elif len(groups) == 1:
        out.lines.append(
            Line(f"all ranks issue the same {n_ops} collective(s) in the same order ({groups[0]['ranges']})")
        )
    for d in cs.get("divergences") or []:
        who, ref = _who(d["ranks"]), _who(d["reference_ranks"])
        verb = "issues" if len(d["reference_ranks"]) == 1 else "issue"
        if d["op"] and d["expected"]:
            what = f"issues {d['op']} where {ref} {verb} {d['expected']}"
        elif d["expected"]:
            what = f"stops before {d['expected']}, which {ref} {verb}"
        else:
            what = f"issues {d['op']} after {ref} issued the last of theirs"
        out.lines.append(
            Line(
                f"HANG RISK: {who} {what} (collective #{d['position']}, in compile {d['compile_id']}):"
                " collectives match by position, so these ranks wait for each other forever",
                alarm=True,
            )
        )
    return [out]


def collectives_parity(session) -> list[dict]:
    """Per compile: collectives scheduled vs called in the output code (`offset`), and calls that no
    `wait_tensor` follows (`missing_waits`), as tlparse's collectives_parity.json counts them; only
    compiles where either is non-zero."""
    out = []
    for r in session.ranks:
        scheduled = {c.compile_id: c.ops for c in r.collectives}
        for cid, ops in scheduled.items():
            code = next(
                (
                    x.payload()
                    for x in reversed(r.by_compile.get(cid, []))
                    if x.kind == "inductor_output_code"
                ),
                None,
            )
            if code is None:
                continue
            sched = Counter(f for op in ops if (f := _family(op)))
            called, waits = Counter(), 0
            for m in _CALL.finditer(_COMMENT.sub("", code)):
                if m.group(1) == "wait_tensor":
                    waits += 1
                elif f := _family(m.group(1)):
                    called[f] += 1
            missing = max(0, sum(called.values()) - waits)
            offset = sum(abs(sched[f] - called[f]) for f in set(sched) | set(called))
            if offset or missing:
                out.append(
                    {
                        "rank": r.rank,
                        "compile_id": cid,
                        "offset": offset,
                        "missing_waits": missing,
                        "scheduled": dict(sched),
                        "called": dict(called),
                        "waits": waits,
                    }
                )
    return out


def parity_section(report: dict) -> list[Section]:
    rows = (report.get("distributed") or {}).get("collectives_parity") or []
    if not rows:
        return []
    out = Section("Collectives parity", gloss="scheduled vs called in the output code; calls without a wait")
    for p in rows:
        bits = []
        if p["missing_waits"]:
            bits.append(
                f"{p['missing_waits']} collective(s) never waited on ({sum(p['called'].values())} called, {p['waits']} wait_tensor)"
            )
        if p["offset"]:
            bits.append(f"{p['offset']} collective(s) differ between the schedule and the code")
        rank = f"rank {p['rank']} " if p["rank"] is not None else ""
        out.lines.append(Line(f"{rank}compile {p['compile_id']}: " + "; ".join(bits), alarm=True))
    return [out]


def runtime_estimates(session) -> dict:
    """Inductor's estimated runtime per graph and rank (ms), the spread across ranks, and ranks
    grouped by their graphs' tensor metadata (shapes, strides, dtypes of every op's outputs)."""
    per_rank = {r.rank: {e.compile_id: e for e in r.runtimes} for r in session.ranks if r.runtimes}
    if not per_rank:
        return {}
    graph_sets = {tuple(sorted(v)) for v in per_rank.values()}
    graphs = []
    available = len(graph_sets) == 1
    if available:
        for cid in sorted(next(iter(graph_sets))):
            ms = {str(rank): round(v[cid].total_ns / 1e6, 4) for rank, v in per_rank.items()}
            graphs.append(
                {"compile_id": cid, "ms": ms, "delta_ms": round(max(ms.values()) - min(ms.values()), 4)}
            )
    meta_groups: dict[tuple, list] = {}
    for rank, v in per_rank.items():
        meta_groups.setdefault(tuple((c, v[c].tensor_meta) for c in sorted(v)), []).append(rank)
    groups = sorted(meta_groups.values(), key=lambda rs: (-len(rs), rs[0] if rs[0] is not None else -1))
    return {
        "available": available,
        "why_not": ""
        if available
        else "ranks estimated different sets of graphs: "
        + "; ".join(f"rank {k}: {len(v)}" for k, v in per_rank.items()),
        "graphs": graphs,
        "tensor_meta_groups": [{"ranks": g, "ranges": rank_ranges(g)} for g in groups],
    }


def runtime_section(report: dict) -> list[Section]:
    rt = (report.get("distributed") or {}).get("runtime_estimates") or {}
    if not rt:
        return []
    out = Section("Runtime estimates", gloss="inductor's, per graph; ms")
    if not rt["available"]:
        out.lines.append(Line(f"not compared: {rt['why_not']}"))
    for g in rt["graphs"][:8]:
        vals = list(g["ms"].values())
        if len(vals) == 1:
            out.lines.append(Line(f"{g['compile_id']}: {vals[0]:.3f} ms"))
        else:
            out.lines.append(
                Line(
                    f"{g['compile_id']}: {min(vals):.3f}-{max(vals):.3f} ms over {len(vals)} ranks,"
                    f" {g['delta_ms']:.3f} ms delta"
                )
            )
    groups = rt["tensor_meta_groups"]
    if len(groups) > 1:
        ranks = "; ".join(f"ranks {g['ranges']}" for g in groups)
        out.lines.append(Line(f"ranks differ in inductor's tensor metadata: {ranks}", alarm=True))
    return [out]


def execution_order(session, schedules: dict) -> dict:
    """The order each rank ran its compiled graphs (torch's `graph_execution` record), compared by
    position: where ranks ran different graphs, and whether those graphs' collectives differ."""
    orders = {r.rank: list(r.exec_order) for r in session.ranks if r.exec_order}
    if not orders:
        return {}
    sched = {(r.rank, c.compile_id): c.ops for r in session.ranks for c in r.collectives}
    rows = []
    for i in range(max(len(v) for v in orders.values())):
        by_rank = {str(k): (v[i] if i < len(v) else None) for k, v in orders.items()}
        issues = []
        if len(set(by_rank.values())) > 1:
            issues.append("order")
            ops = {sched.get((int(k) if k != "None" else None, c)) for k, c in by_rank.items()}
            if len(ops) > 1:
                issues.append("schedule")
        rows.append({"index": i, "by_rank": by_rank, "issues": issues})
    return {
        "per_rank": [{"rank": k, "order": v} for k, v in orders.items()],
        "differs": any(r["issues"] for r in rows),
        "rows": rows,
    }


def order_section(report: dict) -> list[Section]:
    eo = (report.get("distributed") or {}).get("execution_order") or {}
    if not eo:
        return []
    out = Section("Graph execution order", gloss="torch's record of which compiled graph ran when")
    if not eo["differs"]:
        out.lines.append(Line(f"the same on every rank: {', '.join((eo['per_rank'][0]['order'])[:12])}"))
    else:
        first = next(r for r in eo["rows"] if r["issues"])
        ran = ", ".join(f"rank {k} ran {v}" for k, v in first["by_rank"].items())
        sched = " whose collectives differ (a hang risk)" if "schedule" in first["issues"] else ""
        out.lines.append(
            Line(f"order differs across ranks from run #{first['index'] + 1}: {ran}{sched}", alarm=True)
        )
    return [out]


def distributed(session) -> dict:
    """The `distributed` section of the report JSON (empty dict parts when the trace has none)."""
    schedules = collective_schedules(session)
    return {
        "collective_schedules": schedules if schedules["per_rank"] else {},
        "collectives_parity": collectives_parity(session),
        "runtime_estimates": runtime_estimates(session),
        "execution_order": execution_order(session, schedules),
    }


def distributed_sections(report: dict) -> list[Section]:
    """All of it as report sections (none when the trace has no such records)."""
    return schedule_section(report) + parity_section(report) + runtime_section(report) + order_section(report)
