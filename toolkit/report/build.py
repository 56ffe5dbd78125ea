"""The report: a Session summarised as JSON (the DESIGN.md contract) and as text tables.

Parsers return in-memory results; the CLI writes (DESIGN style #10).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import asdict

from tabulate import tabulate

from fxlens.report.rootcause import session_causes
from fxlens.trace.sanitize import clean, for_terminal
from fxlens.trace.session import Session
from fxlens.trace.userframes import short_path

REPORT_VERSION = 1


def _dedup_breaks(session: Session) -> list[dict]:
    """Graph breaks deduplicated by user location and reason; count = compiles that hit it."""
    groups: dict[tuple, dict] = {}
    for b in session.graph_breaks:
        key = (b.file, b.line, b.reason)
        g = groups.get(key)
        if g is None:
            g = groups[key] = {
                "reason": b.reason,
                "file": b.file,
                "line": b.line,
                "function": b.function,
                "count": 0,
                "explanation": b.explanation,
                "hints": list(b.hints),
                "url": b.url,
                "source": b.source,
                "call_path": [
                    {"function": f.function, "file": f.file, "line": f.line, "code": f.code}
                    for f in b.call_path
                ],
                "compile_ids": [],
                "ranks": [],
            }
        g["count"] += 1
        g["compile_ids"].append(b.compile_id)
        if b.rank not in g["ranks"]:
            g["ranks"].append(b.rank)
    return sorted(groups.values(), key=lambda g: (-g["count"], g["file"], g["line"]))


def divergence(session: Session) -> list[dict]:
    """Where ranks differ in graphs, breaks, recompiles: a known cause of collective hangs."""
    if len(session.ranks) < 2:
        return []
    out = []
    for what, attr in (
        ("graphs", "graphs"),
        ("graph breaks", "graph_breaks"),
        ("recompiles", "recompiles"),
        ("recompile limit hits", "limit_hits"),
    ):
        per_rank = {str(r.rank): len(getattr(r, attr)) for r in session.ranks}
        if len(set(per_rank.values())) > 1:
            by_fn = defaultdict(dict)
            for r in session.ranks:
                for fn, n in Counter(x.function for x in getattr(r, attr)).items():
                    by_fn[fn][str(r.rank)] = n
            fns = sorted(
                fn for fn, d in by_fn.items() if len(set(d.values())) > 1 or len(d) < len(session.ranks)
            )
            out.append(
                {
                    "what": what,
                    "per_rank": per_rank,
                    "functions": fns,
                    "message": f"ranks differ in {what}: "
                    + ", ".join(f"rank {k}: {v}" for k, v in per_rank.items())
                    + (f" (in {', '.join(fns)})" if fns else ""),
                }
            )
    return out


def build_report(session: Session, with_guards: bool = True) -> dict:
    """The report as a JSON-ready dict (keys per DESIGN.md, more are welcome)."""
    metrics = session.metrics
    failures = [
        {
            "compile_id": m.compile_id,
            "rank": m.rank,
            "function": m.function,
            "file": m.file,
            "line": m.line,
            "fail_type": m.fail_type,
            "fail_reason": (m.fail_reason or "").split("\n")[0],
        }
        for m in metrics
        if m.fail_type and not (m.fail_reason and "recompile limit exceeded" in m.fail_reason)
    ]
    total = sum(m.total_s or 0.0 for m in metrics)
    report = {
        "version": REPORT_VERSION,
        "source": {
            "path": str(session.path),
            "kind": session.kind,
            "logs": [str(p) for p in session.logs],
            **(
                {k: session.info.get(k) for k in ("script", "argv", "backend", "exit_code")}
                if session.info
                else {}
            ),
        },
        "ranks": [r.rank for r in session.ranks],
        "graphs": [
            {
                "compile_id": g.compile_id,
                "rank": g.rank,
                "function": g.function,
                "file": g.file,
                "line": g.line,
                "num_nodes": g.num_nodes,
                "num_ops": g.num_ops,
                "ops": list(g.ops),
                "co_name": g.co_name,
            }
            for g in session.graphs
        ],
        "graph_breaks": _dedup_breaks(session),
        "recompiles": [
            {
                "compile_id": r.compile_id,
                "rank": r.rank,
                "function": r.function,
                "file": r.file,
                "line": r.line,
                "failed_guards": list(r.failed_guards),
                "co_name": r.co_name,
            }
            for r in session.recompiles
        ],
        "recompile_causes": [asdict(c) for c in session_causes(session)],
        "recompile_limit_hits": [
            {
                "function": h.function,
                "file": h.file,
                "line": h.line,
                "limit": h.limit,
                "limit_type": h.limit_type,
                "compile_id": h.compile_id,
                "rank": h.rank,
            }
            for h in session.limit_hits
        ],
        "compile_times": {
            "total_s": round(total, 4),
            "per_compile": [
                {
                    "compile_id": m.compile_id,
                    "rank": m.rank,
                    "function": m.function,
                    "co_name": m.co_name,
                    "total_s": m.total_s,
                    "backend_s": m.backend_s,
                    "guard_count": m.guard_count,
                }
                for m in metrics
            ],
        },
        "failures": failures,
        "kernels": [
            {
                "compile_id": k.compile_id,
                "rank": k.rank,
                "name": k.name,
                "graph": k.graph,
                "ops": list(k.ops),
                "bytes_read": k.bytes_read,
                "bytes_written": k.bytes_written,
                "source_path": k.source_path,
            }
            for k in session.kernels
        ],
        "fallbacks": _fallbacks(session),
        "divergence": divergence(session),
        "events": session.events,
        "skipped": session.skipped,
    }
    if with_guards:
        report["guards"] = [
            {"compile_id": m.compile_id, "rank": m.rank, "guards": session.guards(m.compile_id, m.rank)}
            for m in metrics
            if m.guard_count
        ]
    return report


def _fallbacks(session: Session) -> list[dict]:
    counts: Counter = Counter()
    for f in session.fallbacks:
        counts[(f.compile_id, f.rank, f.op)] += f.count
    return [{"compile_id": c, "rank": r, "op": op, "count": n} for (c, r, op), n in counts.items()]


def _loc(file: str, line: int) -> str:
    return f"{short_path(file)}:{line}" if file else "?"


def _rank_col(report: dict) -> bool:
    return len(report["ranks"]) > 1


def render_text(report: dict, limit: int = 20) -> str:
    """The human report: tabulate tables, most important first.

    Every string from the trace is shown with its control characters escaped (before the tables
    are laid out, so columns still line up), and the whole text once more as a backstop.
    """
    report = clean(report)
    out: list[str] = []
    ranked = _rank_col(report)
    g = report["graphs"]
    fns = sorted({x["function"] for x in g})
    head = f"fxlens report: {len(g)} graph(s) in {len(fns)} function(s), {sum(b['count'] for b in report['graph_breaks'])} graph break(s), {len(report['recompiles'])} recompile(s)"
    if ranked:
        head += f", {len(report['ranks'])} ranks"
    out += [head, ""]
    for d in report["divergence"]:
        out.append(
            f"!! RANK DIVERGENCE: {d['message']} -- ranks that compile differently can hang in collectives"
        )
    if report["divergence"]:
        out.append("")
    if report["graph_breaks"]:
        out.append("Graph breaks (deduplicated by location and reason):")
        rows = []
        for b in report["graph_breaks"][:limit]:
            rows.append(
                [b["count"], _loc(b["file"], b["line"]), b["function"], b["reason"][:70]]
                + ([",".join(map(str, b["ranks"]))] if ranked else [])
            )
        out.append(
            tabulate(
                rows,
                headers=["count", "where", "function", "reason"] + (["ranks"] if ranked else []),
                tablefmt="simple",
            )
        )
        for b in report["graph_breaks"][:limit]:
            out.append(f"\n  {_loc(b['file'], b['line'])}  {b['source']}")
            if len(b["call_path"]) > 1:
                out.append(
                    "    call path: " + " -> ".join(f"{f['function']}:{f['line']}" for f in b["call_path"])
                )
            if b["explanation"]:
                out.append(f"    why: {b['explanation'][:200]}")
            for h in b["hints"][:2]:
                if "report an issue" not in h:
                    out.append(f"    hint: {h[:200]}")
        out.append("")
    if report["recompile_causes"]:
        out.append("Recompiles, by root cause:")
        rows = [
            [c["count"], f"{c['function']} ({_loc(c['file'], c['line'])})", c["message"]]
            + ([",".join(map(str, c["ranks"]))] if ranked else [])
            for c in report["recompile_causes"]
        ]
        headers = ["recompiles", "function", "cause"] + (["ranks"] if ranked else [])
        out.append(tabulate(rows, headers=headers, tablefmt="simple"))
        for c in report["recompile_causes"]:
            out.append(f"  fix for {c['subject']}: {c['fix']}")
        out.append("")
    if report["recompile_limit_hits"]:
        out.append("Recompile limit hits (these frames now run EAGERLY, silently):")
        rows = [
            [h["function"], _loc(h["file"], h["line"]), f"{h['limit_type']}={h['limit']}"]
            + ([h["rank"]] if ranked else [])
            for h in report["recompile_limit_hits"]
        ]
        out.append(
            tabulate(
                rows, headers=["function", "where", "limit"] + (["rank"] if ranked else []), tablefmt="simple"
            )
        )
        out.append("")
    if report["failures"]:
        out.append("Compile failures:")
        rows = [
            [f["compile_id"], f["function"], f["fail_type"], f["fail_reason"][:80]]
            for f in report["failures"]
        ]
        out.append(tabulate(rows, headers=["compile id", "function", "type", "reason"], tablefmt="simple"))
        out.append("")
    if g:
        out.append("Graphs:")
        rows = []
        for x in g[:limit]:
            ops = ", ".join(o.split(".")[-1] for o in x["ops"][:6]) + (" ..." if len(x["ops"]) > 6 else "")
            rows.append(
                ([x["rank"]] if ranked else [])
                + [
                    x["compile_id"],
                    x["function"],
                    _loc(x["file"], x["line"]),
                    x["num_nodes"],
                    x["num_ops"],
                    ops,
                ]
            )
        out.append(
            tabulate(
                rows,
                headers=(["rank"] if ranked else [])
                + ["compile id", "function", "where", "nodes", "ops", "ops used"],
                tablefmt="simple",
            )
        )
        if len(g) > limit:
            out.append(f"  ... {len(g) - limit} more (see --json)")
        out.append("")
    ct = report["compile_times"]
    if ct["per_compile"]:
        slow = sorted(ct["per_compile"], key=lambda m: -(m["total_s"] or 0))[:5]
        rows = [
            [
                m["compile_id"],
                m["function"],
                f"{m['total_s'] or 0:.2f}",
                f"{m['backend_s'] or 0:.2f}",
                m["guard_count"],
            ]
            for m in slow
        ]
        out.append(
            f"Compile time: {ct['total_s']:.2f} s total over {len(ct['per_compile'])} compile(s); slowest:"
        )
        out.append(
            tabulate(
                rows, headers=["compile id", "function", "total s", "backend s", "guards"], tablefmt="simple"
            )
        )
        out.append("")
    if report["kernels"]:
        k = report["kernels"]
        out.append(
            f"fxlens kernels: {len(k)} (bytes read {sum(x['bytes_read'] for x in k)}, written {sum(x['bytes_written'] for x in k)})"
        )
        rows = [
            [x["compile_id"], x["name"], len(x["ops"]), x["bytes_read"], x["bytes_written"]]
            for x in k[:limit]
        ]
        out.append(
            tabulate(
                rows,
                headers=["compile id", "kernel", "ops", "bytes read", "bytes written"],
                tablefmt="simple",
            )
        )
        out.append("")
    if report["fallbacks"]:
        fb = Counter()
        for f in report["fallbacks"]:
            fb[f["op"]] += f["count"]
        out.append(
            "fxlens fallbacks (ops run as ATen calls): "
            + ", ".join(f"{op} x{n}" for op, n in fb.most_common())
        )
        out.append("")
    for ev in report["events"]:
        if ev.get("summary"):
            out.append(f"[{ev.get('event')}] {ev['summary']}")
    for s in report["skipped"]:
        out.append(f"note: {s}")
    if not g and not report["graph_breaks"] and not report["failures"]:
        out.append("No graphs were compiled.")
    return for_terminal("\n".join(out).rstrip() + "\n")
