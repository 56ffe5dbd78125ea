"""The report as text: `render_text(report)`, the tables `fxlens run` and `fxlens report` print.

One function per section, most important first; each returns its lines (none when the section is
empty), and `render_text` joins them.
"""

from __future__ import annotations

from collections import Counter

from fxlens.report.blocks import block_lines
from fxlens.report.coldstart import cache_lines, cache_outcomes, cold_start_lines
from fxlens.report.compiles import TIME_COLUMNS, compile_lines
from fxlens.report.counts import report_counts
from fxlens.report.distributed import distributed_lines
from fxlens.report.failures import failure_lines
from fxlens.report.fixes import break_actions_of, describe
from fxlens.report.linetimes import line_time_lines
from fxlens.report.outputcode import output_code_lines
from fxlens.report.passes import pass_lines
from fxlens.report.ranks import fold_ranks, rank_lines, rank_ranges
from fxlens.report.special_graphs import head_counts, special_lines
from fxlens.report.specializations import specialization_lines
from fxlens.report.stacktrie import stack_trie_lines
from fxlens.report.texttable import tabulate
from fxlens.trace.graph_code import op_name
from fxlens.trace.sanitize import clean, clip, for_terminal
from fxlens.trace.userframes import location


def _rank_col(report: dict) -> bool:
    return len(report["ranks"]) > 1


def _head_lines(report: dict) -> list[str]:
    g = report["graphs"]
    fns = sorted({x["function"] for x in g})
    n = report_counts(report)  # the one count budgets and diff use too
    head = f"fxlens report: {n['graphs']} graph(s) in {len(fns)} function(s), {n['graph_breaks']} graph break(s), {n['recompiles']} recompile(s)"
    if n["eager_frames"]:
        head += f", {n['eager_frames']} frame(s) run eagerly"
    head += head_counts(report)  # AOTInductor compiles, export issues
    if _rank_col(report):
        head += f", {len(report['ranks'])} ranks"
    if workers := report.get("workers"):  # processes the script started: compiled, but not ranks
        head += f", {len(workers)} worker process(es) (not ranks)"
    out = [head]
    if backend := (report.get("source") or {}).get("backend"):  # markdown/html say it too
        out.append(
            f"backend override: {backend} (every torch.compile call ran with it: fxlens run --backend)"
        )
    out.append("")
    if report.get("rank_groups"):  # ranks grouped by behaviour (fxlens.report.ranks), a few lines
        out += rank_lines(report)
    else:
        for d in report["divergence"]:
            out.append(
                f"!! RANK DIVERGENCE: {d['message']} -- ranks that compile differently can hang in collectives"
            )
        if report["divergence"]:
            out.append("")
    for h in report.get("headlines", []):
        out.append(f"!! {h['message']}")
        out.append(f"   fix: {h['fix']}")
    if report.get("headlines"):
        out.append("")
    return out


def _break_lines(report: dict, limit: int) -> list[str]:
    if not report["graph_breaks"]:
        return []
    ranked = _rank_col(report)
    out = ["Graph breaks (deduplicated by location and reason):"]
    rows = []
    for b in report["graph_breaks"][:limit]:
        lib = b.get("library")  # breaks of one line in two libraries are two rows: say which is which
        fn = f"{b['function']}, in {lib['file']}:{lib['line']}" if lib else b["function"]
        rows.append(
            [b["count"], location(b["file"], b["line"]), fn, clip(b["reason"], 70)]
            + ([rank_ranges(b["ranks"], limit=6)] if ranked else [])
        )
    out.append(
        tabulate(
            rows,
            headers=["count", "where", "function", "reason"] + (["ranks"] if ranked else []),
            tablefmt="simple",
        )
    )
    if (
        len(report["graph_breaks"]) > limit
    ):  # never cut silently (rule: never cut silently): say how many and where
        out.append(f"  ... {len(report['graph_breaks']) - limit} more break site(s) (see --json)")
    for b in report["graph_breaks"][:limit]:
        out.append(f"\n  {location(b['file'], b['line'])}  {b['source']}")
        lib = b.get("library")
        if lib:  # the user's line only called into a library, which is where torch broke
            code = f"  `{clip(lib['code'], 80)}`" if lib.get("code") else ""
            out.append(f"    inside {lib['file']}:{lib['line']} ({lib['function']}){code}")
            own = break_actions_of(b)  # a row read off the library frame: a switch on the caller's side
            if own != break_actions_of({"reason": b["reason"], "explanation": b.get("explanation")}):
                out += [f"    fix: {describe(a)}" for a in own]
        if b.get("split"):
            out.append(f"    why {b['split']['graphs']} graphs: {b['split']['message']}")
        if len(b["call_path"]) > 1:
            out.append(
                "    call path: " + " -> ".join(f"{f['function']}:{f['line']}" for f in b["call_path"])
            )
        if b["explanation"]:
            out.append(f"    why: {clip(b['explanation'], 200)}")
        whose = "torch's hint for the library's code" if lib else "hint"
        for h in b["hints"][:2]:
            if "report an issue" not in h:
                out.append(f"    {whose}: {clip(h, 200)}")
        if b.get("gb_id"):
            out.append(
                f"    torch's graph-break id: {b['gb_id']}" + (f" ({b['url']})" if b.get("url") else "")
            )
    out.append("")
    return out


def _recompile_lines(report: dict) -> list[str]:
    """Recompiles by root cause, then the frames that hit the recompile limit."""
    ranked = _rank_col(report)
    out = []
    if report["recompile_causes"]:
        out.append("Recompiles, by root cause:")
        rows = [
            [c["count"], f"{c['function']} ({location(c['file'], c['line'])})", c["message"]]
            + ([rank_ranges(c["ranks"], limit=6)] if ranked else [])
            for c in report["recompile_causes"]
        ]
        headers = ["recompiles", "function", "cause"] + (["ranks"] if ranked else [])
        out.append(tabulate(rows, headers=headers, tablefmt="simple"))
        for c in report["recompile_causes"]:
            out.append(f"  {c['subject']}:")
            if c.get("guard"):
                out.append(f"    torch's guard: {clip(c['guard'], 200)}")
            out.append(f"    fix: {c['fix']}")
            for m in c.get("measured") or []:  # never advice without what fxlens fix measured of it
                out.append(f"    measured by fxlens fix: [{m['verdict']}] {clip(m['why'], 160)}")
        out.append("")
    if report["recompile_limit_hits"]:
        out.append("Recompile limit hits (these frames now run EAGERLY, silently):")
        hits = fold_ranks([{**h, "compile_id": ""} for h in report["recompile_limit_hits"]])
        rows = [
            [h["function"], location(h["file"], h["line"]), f"{h['limit_type']}={h['limit']}"]
            + ([h["rank"]] if ranked else [])
            for h in hits
        ]
        out.append(
            tabulate(
                rows, headers=["function", "where", "limit"] + (["rank"] if ranked else []), tablefmt="simple"
            )
        )
        out.append("")
    return out


# what a graph is when it is not a plain Dynamo graph (the report's graphs[].kind)
_KIND_TAG = {"ddp_split": " [DDP-split]", "compiled_autograd": " [compiled autograd]"}


def _graph_lines(report: dict, limit: int) -> list[str]:
    g = report["graphs"]
    if not g:
        return []
    ranked = _rank_col(report)
    if ranked:  # the same graph on many ranks is one row, its ranks as ranges
        g = fold_ranks(g)
    rows = []
    for x in g[:limit]:
        ops = ", ".join(op_name(o) for o in x["ops"][:6]) + (" ..." if len(x["ops"]) > 6 else "")
        rows.append(
            ([x["rank"]] if ranked else [])
            + [
                x["compile_id"],
                x["function"] + _KIND_TAG.get(x.get("kind"), ""),
                location(x["file"], x["line"]),
            ]
            + [x["num_nodes"], x["num_ops"], ops]
        )
    out = ["Graphs:"]
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
    return out


def _secs(v) -> str:
    return "-" if v is None else f"{v:.2f}"


def _compile_time_lines(report: dict) -> list[str]:
    """The slowest compiles with torch's breakdown: Dynamo, the backend (of which inductor and its
    code generation), the backward graph's compile, and cache hits/misses."""
    ct = report["compile_times"]
    if not ct["per_compile"]:
        return []
    ranked = len({m["rank"] for m in ct["per_compile"]}) > 1
    slow = sorted(ct["per_compile"], key=lambda m: -(m["total_s"] or 0))
    if ranked:  # one row per compile id and function: its slowest rank (`slow` is slowest first)
        best: dict = {}
        for m in slow:
            best.setdefault((m["compile_id"], m["function"]), m)
        slow = list(best.values())
    slow = slow[:5]
    rows = []
    for m in slow:
        cache = cache_outcomes(m)
        rows.append(
            ([m["rank"]] if ranked else [])
            + [
                m["compile_id"],
                m["function"],
                _secs(m["total_s"]),
                _secs(m.get("dynamo_s")),
                _secs(m["backend_s"]),
                _secs(m.get("inductor_s")),
                _secs(m.get("backward_s")),
                ", ".join(f"{k} {v}" for k, v in cache.items()) or "-",
                m["guard_count"],
            ]
        )
    bwd = ct.get("backward_s") or 0
    head = f"Compile time: {ct['total_s']:.2f} s total over {len(ct['per_compile'])} compile(s)"
    head += f" (backward graphs {bwd:.2f} s of it)" if bwd else ""
    shown = f"; slowest {len(slow)} (all: see --json):" if len(ct["per_compile"]) > len(slow) else ":"
    headers = (["rank"] if ranked else []) + [*TIME_COLUMNS, "cache", "guards"]
    return [
        *cold_start_lines(ct),
        head + shown,
        tabulate(rows, headers=headers, tablefmt="simple"),
        "",
        *cache_lines(ct),
    ]


def _backend_lines(report: dict, limit: int) -> list[str]:
    """The fxlens backend's kernels and the ops it ran as ATen calls."""
    out = []
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
        if len(k) > limit:
            out.append(f"  ... {len(k) - limit} more kernel(s) (see --json)")
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
    return out


def _note_lines(report: dict) -> list[str]:
    out = [f"[{ev.get('event')}] {ev['summary']}" for ev in report["events"] if ev.get("summary")]
    out += [f"note: {s}" for s in report["skipped"]]
    if (
        not report["graphs"]
        and not report["graph_breaks"]
        and not report["failures"]
        and not report.get("headlines")
        and not report.get("export_issues")
        and not report.get("aot_inductor")
        and not report.get("special_graphs")
    ):
        out.append("No graphs were compiled.")
    return out


def _fix_lines(report: dict) -> list[str]:
    """`fxlens fix`'s results when the session holds them (also after a Ctrl-C: each was appended
    as it was measured)."""
    fixes = [e for e in report.get("events") or [] if e.get("event") == "fix"]
    if not fixes:
        return []
    from fxlens.report.fixes import fix_lines

    together = next((e for e in reversed(report["events"]) if e.get("event") == "fix_together"), None)
    return ["Fixes tried (fxlens fix):", *fix_lines({"fixes": fixes, "together": together}), ""]


def render_text(report: dict, limit: int = 20) -> str:
    """The human report: tabulate tables, most important first.

    Every string from the trace is shown with its control characters escaped (before the tables
    are laid out, so columns still line up), and the whole text once more as a backstop.
    """
    report = clean({k: v for k, v in report.items() if k != "guards"})  # guards: render_guards
    out = [
        *_head_lines(report),
        *distributed_lines(report),  # collectives (a hang risk), parity, runtime, execution order
        *_break_lines(report, limit),
        *_recompile_lines(report),
        *_fix_lines(report),
        *failure_lines(report),  # folded across ranks (fxlens.report.failures)
        *special_lines(report),  # export issues, DDP splits, compiled autograd, AOTInductor, unknown kinds
        *_graph_lines(report, limit),
        *_compile_time_lines(report),
        *block_lines(report),  # repeated blocks and regional compilation (fxlens.report.blocks)
        *line_time_lines(report),  # Dynamo's seconds by source line (fxlens.report.linetimes)
        *pass_lines(report),  # the backend's seconds by pass (fxlens.report.passes)
        *compile_lines(report),  # restarts, their reasons whole (fxlens.report.compiles)
        *specialization_lines(report),
        *stack_trie_lines(report),
        *output_code_lines(report),
        *_backend_lines(report, limit),
        *_note_lines(report),
    ]
    return for_terminal("\n".join(out).rstrip() + "\n")
