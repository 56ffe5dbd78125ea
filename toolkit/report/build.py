"""The report: a Session summarised as a JSON-ready dict (the JSON contract), `build_report`.

The text tables are fxlens.report.text's (`render_text`).

Parsers return in-memory results; the CLI writes (rule: parsers return, the CLI writes).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import asdict
from pathlib import Path

from fxlens.report.blocks import repeated_blocks
from fxlens.report.breaksplit import break_split
from fxlens.report.compilefixes import compile_fixes
from fxlens.report.compiles import compile_times, failures_and_restarts
from fxlens.report.distributed import distributed
from fxlens.report.failures import compile_failed
from fxlens.report.headlines import gb_doc, headlines
from fxlens.report.kernelcompile import kernel_compile
from fxlens.report.linetimes import compile_lines
from fxlens.report.measured import attach as attach_measured
from fxlens.report.outputcode import output_code
from fxlens.report.passes import compile_passes
from fxlens.report.ranks import rank_groups
from fxlens.report.special_graphs import aot_inductor, export_issues, special_graphs, unknown_records
from fxlens.report.specializations import specializations
from fxlens.report.stacktrie import stack_trie
from fxlens.trace.session import Session
from fxlens.trace.userfiles import is_user_file, library_path

REPORT_VERSION = 1


def _dedup_breaks(session: Session) -> list[dict]:
    """Graph breaks deduplicated by user location, reason and the library frame that broke (one user
    line calling two libraries that each break is two breaks); count = compiles that hit it."""
    groups: dict[tuple, dict] = {}
    for b in session.graph_breaks:
        if b.skipped_frame:  # torch gave up on the frame: listed once, under eager_frames
            continue
        key = (b.file, b.line, b.reason, (b.library.file, b.library.line) if b.library else None)
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
                # the frame that broke when it is a library's (the user's line only called it)
                "library": _frame(b.library),
                "gb_id": b.gb_id,
                "gb_doc": gb_doc(b.gb_id),
            }
        g["count"] += 1
        g["compile_ids"].append(b.compile_id)
        if b.rank not in g["ranks"]:
            g["ranks"].append(b.rank)
    for g in groups.values():  # a break inside an inlined submodule: its graphs, and why so many
        g["split"] = break_split(session, g)
    return sorted(groups.values(), key=lambda g: (-g["count"], g["file"], g["line"]))


def divergence(session: Session) -> list[dict]:
    """Where ranks differ in graphs, breaks, recompiles: a known cause of collective hangs (worker
    processes are not ranks: never compared)."""
    ranks = session.rank_models
    if len(ranks) < 2:
        return []
    out = []
    for what, attr in (
        ("graphs", "graphs"),
        ("graph breaks", "graph_breaks"),
        ("recompiles", "recompiles"),
        ("recompile limit hits", "limit_hits"),
    ):
        per_rank = {str(r.rank): len(getattr(r, attr)) for r in ranks}
        if len(set(per_rank.values())) > 1:
            by_fn = defaultdict(dict)
            for r in ranks:
                for fn, n in Counter(x.function for x in getattr(r, attr)).items():
                    by_fn[fn][str(r.rank)] = n
            fns = sorted(fn for fn, d in by_fn.items() if len(set(d.values())) > 1 or len(d) < len(ranks))
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


def _frame(f) -> dict | None:
    return None if f is None else {"file": f.file, "line": f.line, "function": f.function, "code": f.code}


def _skipped_breaks(session: Session) -> dict[tuple, object]:
    """(rank, compile id) -> the graph break after which torch gave up on the frame."""
    return {(b.rank, b.compile_id): b for b in session.graph_breaks if b.skipped_frame}


def _failures(session: Session, skipped: dict[tuple, object]) -> list[dict]:
    """Compiles that failed, with torch's whole text (a recompile-limit stop has its own section; a
    frame torch gave up on after a graph break it could not resume is under eager_frames, `skipped`)."""
    return [
        {
            "compile_id": m.compile_id,
            "rank": m.rank,
            "function": m.function,
            "file": m.fail_user_file or m.file,
            "line": m.fail_user_line or m.line,
            "fail_type": m.fail_type,
            "fail_reason": m.fail_reason or "",
            "source": session.source_line(m.fail_user_file, m.fail_user_line) if m.fail_user_file else "",
        }
        for m in session.metrics
        if m.fail_type
        and not (m.fail_reason and "recompile limit exceeded" in m.fail_reason)
        and (m.rank, m.compile_id) not in skipped
    ]


def _eager_frames(session: Session, skipped: dict[tuple, object]) -> list[dict]:
    """Frames torch gave up on: from that compile on, they run eagerly (one event, counted once).

    `function`/`file`/`line` place the break in the user's code (the call line when it is in a
    library, which `library` then names); `frame` is the frame torch compiled and gave up on, from
    its compilation metrics: a library's `wrapper`, not the user's `<module>` that called it."""
    compiled = {(m.rank, m.compile_id): m for m in session.metrics}
    out = []
    for b in skipped.values():
        m = compiled.get((b.rank, b.compile_id))
        out.append(
            {
                "compile_id": b.compile_id,
                "rank": b.rank,
                "function": b.function,
                "file": b.file,
                "line": b.line,
                "reason": b.reason,
                "explanation": b.explanation,
                "source": b.source,
                "library": _frame(b.library),
                "hints": list(b.hints or ()),
                "frame": None
                if m is None
                else {
                    "function": m.co_name or m.function,
                    "file": m.code_file if is_user_file(m.code_file) else library_path(m.code_file),
                    "line": m.code_line,
                },
            }
        )
    return out


def _source(session: Session) -> dict:
    """Where the report came from: the session or trace, its logs, and the run's script if known."""
    return {
        "path": str(session.path),
        "kind": session.kind,
        "logs": [str(p) for p in session.logs],
        **(
            {
                k: session.info.get(k)
                for k in (
                    "script",
                    "argv",
                    "module",
                    "env",
                    "nproc",
                    "backend",
                    "check",
                    "exit_code",
                    "interrupted",
                    "timed_out",
                    "torch_trace",
                )
            }
            if session.info
            else {}
        ),
    }


def _rows(items, names: tuple[str, ...]) -> list[dict]:
    """One JSON object per item: the attributes `names`, in that order (sequences as new lists)."""
    return [
        {n: list(v) if isinstance(v := getattr(o, n), (tuple, list)) else v for n in names} for o in items
    ]


def _graphs(session: Session) -> list[dict]:
    names = (
        "compile_id",
        "rank",
        "function",
        "file",
        "line",
        "num_nodes",
        "num_ops",
        "ops",
        "co_name",
        "library",
    )
    rows = _rows(session.graphs, names)
    split = {(s.rank, s.compile_id) for r in session.ranks for s in r.specials if s.kind == "ddp_split"}
    for row in rows:  # what the graph is: Dynamo's, compiled autograd's (`!0/1/0`), or DDP-split
        cid = row["compile_id"]
        row["kind"] = (
            "compiled_autograd"
            if cid.startswith("!")
            else "ddp_split"
            if (row["rank"], cid) in split
            else "dynamo"
        )
    return rows


def _recompiles(session: Session) -> list[dict]:
    names = ("compile_id", "rank", "function", "file", "line", "failed_guards", "co_name")
    rows = _rows(session.recompiles, names)
    for row, rc in zip(rows, session.recompiles):
        row["guards"] = [asdict(g) for g in rc.guards]  # parsed: kind, source, name, values, code
    return rows


def _limit_hits(session: Session) -> list[dict]:
    names = ("function", "file", "line", "limit", "limit_type", "compile_id", "rank")
    return _rows(session.limit_hits, names)


def _kernels(session: Session) -> list[dict]:
    names = ("compile_id", "rank", "name", "graph", "ops", "bytes_read", "bytes_written", "source_path")
    return _rows(session.kernels, names)


def _guards(session: Session) -> list[dict]:
    """Each compile's guard lines; the same guards on many ranks are one list in memory (the JSON
    still writes them per rank)."""
    same: dict[str, list[str]] = {}
    out = []
    for m in session.metrics:
        if m.guard_count:
            lines = session.guards(m.compile_id, m.rank)
            out.append(
                {
                    "compile_id": m.compile_id,
                    "rank": m.rank,
                    "guards": same.setdefault("\n".join(lines), lines),
                }
            )
    return out


def _causes(session: Session) -> list[dict]:
    """Each recompile's root cause; the analysis (guards, argument paths, fixes) is loaded only for
    a trace that recompiled, which a plain report's start does not pay for."""
    if not any(r.recompiles for r in session.ranks):
        return []
    from fxlens.report.rootcause import session_causes

    return [{**asdict(c), "actions": list(c.actions)} for c in session_causes(session)]


def build_report(session: Session, with_guards: bool = True) -> dict:
    """The report as a JSON-ready dict (the contract's keys, more are welcome)."""
    times = compile_times(session)  # per-compile stages, caches, restarts (fxlens.report.compiles)
    skipped = _skipped_breaks(session)
    report = {
        "version": REPORT_VERSION,
        "source": _source(session),
        "ranks": [r.rank for r in session.rank_models],
        # worker processes the script forked or spawned (not ranks), each with the rank it belongs to
        "workers": [{"log": Path(w.log).name, "pid": w.pid, "rank": w.worker_of} for w in session.workers],
        "graphs": _graphs(session),
        "graph_breaks": _dedup_breaks(session),
        "recompiles": _recompiles(session),
        "recompile_causes": _causes(session),
        "recompile_limit_hits": _limit_hits(session),
        "compile_times": times,
        # graphs that inline N instances of one module class, with the regional-compilation fix
        "repeated_blocks": repeated_blocks(session, times["per_compile"]),
        "failures": _failures(session, skipped),
        "eager_frames": _eager_frames(session, skipped),
        "kernels": _kernels(session),
        "fallbacks": _fallbacks(session),
        "divergence": divergence(session),
        "rank_groups": rank_groups(session),
        "failures_and_restarts": failures_and_restarts(times["per_compile"]),
        "specializations": specializations(session),
        "stack_trie": stack_trie(session),
        "output_code": output_code(session),
        "distributed": distributed(session),
        "export_issues": export_issues(session),
        "special_graphs": special_graphs(session),
        "aot_inductor": aot_inductor(session),
        "unknown_records": unknown_records(session),
        "events": session.events,
        "skipped": session.skipped,
        # logs that end mid-record (a job killed while writing them): their counts are a lower bound
        "truncated": [
            {"log": Path(m.log).name, "rank": m.rank, "line": m.truncated}
            for m in session.ranks
            if m.truncated
        ],
    }
    # Dynamo's seconds by source line, where the runner measured them
    report["compile_lines"] = compile_lines(session)
    # AOTAutograd's and inductor's seconds by pass, from torch's timed events
    report["compile_passes"] = compile_passes(session)
    # compile time a fix can cut (re-traces per shape, functions worth skipping), with its actions
    report["compile_fixes"] = compile_fixes(report, session)
    # inductor's compile seconds by kernel, where torch logs them (Triton), by source line
    report["kernel_compile"] = kernel_compile(session, report["output_code"])
    if with_guards:
        report["guards"] = _guards(session)
        attach_measured(report, session)  # what `fxlens fix` measured of the fixes printed
    # the compiled object was called and its compile raised: never "never called" (fxlens fix reads it)
    report["compile_failed"] = compile_failed(report)
    report["headlines"] = headlines(report, session)
    return report


def _fallbacks(session: Session) -> list[dict]:
    counts: Counter = Counter()
    for f in session.fallbacks:
        counts[(f.compile_id, f.rank, f.op)] += f.count
    return [{"compile_id": c, "rank": r, "op": op, "count": n} for (c, r, op), n in counts.items()]
