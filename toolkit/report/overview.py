"""The report's opening sections as document blocks, built once for every output: the head (the
counts, the backend override, rank groups or divergence, the headlines), the graphs table (with
each graph's code when the trace is at hand) and the compile-time table.

A builder is given what differs between outputs, never a format: LIMIT (the rows the terminal
shows), WHERE (file, line) -> str (how a location is written) and TEXT (how free text is
shortened), and for the graphs' code ARTIFACT (compile id, kind, rank) -> str | None, the Session's
lookup (the text report has none: the terminal shows no code).
"""

from __future__ import annotations

from fxlens.report.coldstart import cache_outcomes, cold_start_section
from fxlens.report.compiles import TIME_COLUMNS
from fxlens.report.counts import report_counts
from fxlens.report.document import MAX_ROWS, Code, Excerpt, Line, Section, Table
from fxlens.report.ranks import fold_ranks, rank_section
from fxlens.report.special_graphs import head_counts
from fxlens.trace.graph_code import op_name
from fxlens.trace.userframes import location

#: graphs whose code is shown (each in its own collapsible section), and lines per graph
MAX_GRAPH_CODE = 12
MAX_CODE_LINES = 200
#: the slowest compiles the terminal shows
TIME_ROWS = 5


def _same(x: str) -> str:
    return x


def _ranked(report: dict) -> bool:
    return len(report.get("ranks") or []) > 1


def head_section(report: dict) -> list[Section]:
    """The first line: graphs, functions, breaks, recompiles, eager frames, AOTInductor compiles and
    export issues, ranks, worker processes; under it the backend override, when there was one."""
    n = report_counts(report)  # the one count budgets and diff use too
    fns = {x["function"] for x in report["graphs"]}
    head = f"{n['graphs']} graph(s) in {len(fns)} function(s), {n['graph_breaks']} graph break(s)"
    head += f", {n['recompiles']} recompile(s)"
    if n["eager_frames"]:
        head += f", {n['eager_frames']} frame(s) run eagerly"
    head += head_counts(report)  # AOTInductor compiles, export issues
    if _ranked(report):
        head += f", {len(report['ranks'])} ranks"
    if workers := report.get("workers"):  # processes the script started: compiled, but not ranks
        head += f", {len(workers)} worker process(es) (not ranks)"
    lines = []
    if backend := (report.get("source") or {}).get("backend"):
        said = f"backend override: {backend} (every torch.compile call ran with it: fxlens run --backend)"
        lines.append(Line(said, indent=0))
    return [Section("fxlens report", lines, tail=head)]


def head_findings(report: dict, text=_same) -> list[Section]:
    """What the reader must see first: the ranks grouped by behaviour (else any rank divergence),
    then the report's headlines, each with its fix."""
    out = rank_section(report)  # ranks grouped by behaviour (fxlens.report.ranks), a few lines
    if not out and report.get("divergence"):
        said = " -- ranks that compile differently can hang in collectives"
        lines = [Line(f"RANK DIVERGENCE: {text(d['message'])}{said}", 0, True) for d in report["divergence"]]
        out.append(Section("", lines))
    if heads := report.get("headlines"):
        lines = []
        for h in heads:
            lines += [Line(text(h["message"]), 0, True), Line(f"fix: {text(h['fix'])}", 3, joins=True)]
        out.append(Section("", lines))
    return out


# what a graph is when it is not a plain Dynamo graph (the report's graphs[].kind)
_KIND_TAG = {"ddp_split": " [DDP-split]", "compiled_autograd": " [compiled autograd]"}


def _graph_row(x: dict, ranked: bool, where) -> list:
    ops = ", ".join(op_name(o) for o in x["ops"][:6]) + (" ..." if len(x["ops"]) > 6 else "")
    return ([x["rank"]] if ranked else []) + [
        Code(x["compile_id"]),
        [Code(x["function"]), _KIND_TAG.get(x.get("kind"), "")],
        Code(where(x["file"], x["line"])),
        x["num_nodes"],
        x["num_ops"],
        Code(ops),
    ]


def clip_code(text: str) -> str:
    """TEXT's first MAX_CODE_LINES lines (a graph's code, a compile's guards) and how many more."""
    lines = text.split("\n")
    if len(lines) <= MAX_CODE_LINES:
        return text
    more = f"... {len(lines) - MAX_CODE_LINES} more lines (fxlens report --guards / the TUI)"
    return "\n".join(lines[:MAX_CODE_LINES] + [more])


def _graph_code(graphs: list[dict], artifact, text) -> list:
    """Each graph's code (the same graph on many ranks once), the first MAX_GRAPH_CODE of them."""
    same: dict = {}
    for g in graphs:
        same.setdefault((g["compile_id"], g["function"], g["num_nodes"], tuple(g["ops"])), g)
    out: list = []
    for g in list(same.values())[:MAX_GRAPH_CODE]:
        if code := artifact(g["compile_id"], "dynamo_output_graph", g["rank"]):
            name = f"graph {g['compile_id']} ({g['function']}, {g['num_nodes']} nodes)"
            out.append(Excerpt(text(clip_code(code)), name, lang="python"))
    if len(graphs) > MAX_GRAPH_CODE:
        out.append(
            Line(f"Code of {len(graphs) - MAX_GRAPH_CODE} more graph(s): fxlens tui, or the trace.", 0)
        )
    return out


def graph_section(report: dict, limit: int | None = 20, where=location, text=_same, artifact=None) -> list:
    """The graphs, one row per graph (the same graph on many ranks: one row, its ranks as ranges),
    and with ARTIFACT each graph's code."""
    graphs = report["graphs"]
    if not graphs:
        return []
    ranked = _ranked(report)
    table = Table(
        (["rank"] if ranked else []) + ["compile id", "function", "where", "nodes", "ops", "ops used"],
        [_graph_row(x, ranked, where) for x in (fold_ranks(graphs) if ranked else graphs)],
        limit=limit,
        more="  ... {n} more (see --json)",
        fold=MAX_ROWS,
        folded="{n} more graphs",
    )
    return [Section("Graphs", [table, *(_graph_code(graphs, artifact, text) if artifact else [])])]


def _secs(v) -> str:
    return "-" if v is None else f"{v:.2f}"


def _time_row(m: dict, ranked: bool) -> list:
    cache = cache_outcomes(m)
    return ([m["rank"]] if ranked else []) + [
        Code(m["compile_id"]),
        Code(m["function"]),
        *(_secs(m.get(k)) for k in ("total_s", "dynamo_s", "backend_s", "inductor_s", "backward_s")),
        ", ".join(f"{k} {v}" for k, v in cache.items()) or "-",
        m["guard_count"],
    ]


def compile_time_section(report: dict, limit: int | None = TIME_ROWS) -> list[Section]:
    """The slowest compiles (LIMIT of them; one row per compile id and function, its slowest rank's
    figures) with torch's breakdown: Dynamo, the backend (of which inductor and its code
    generation), the backward graph's compile, cache hits/misses; where cold start goes above."""
    ct = report["compile_times"]
    per = ct["per_compile"]
    if not per:
        return []
    ranked = len({m["rank"] for m in per}) > 1
    slow = sorted(per, key=lambda m: -(m["total_s"] or 0))
    if ranked:  # one row per compile id and function: its slowest rank (`slow` is slowest first)
        best: dict = {}
        for m in slow:
            best.setdefault((m["compile_id"], m["function"]), m)
        slow = list(best.values())
    shown = slow[:limit]
    bwd = ct.get("backward_s") or 0
    head = f"{ct['total_s']:.2f} s total over {len(per)} compile(s)"
    head += f" (backward graphs {bwd:.2f} s of it)" if bwd else ""
    cut = limit is not None and len(per) > len(shown)  # (the terminal: also when ranks were folded)
    head += f"; slowest {len(shown)} (all: see --json):" if cut else ":"
    headers = (["rank"] if ranked else []) + [*TIME_COLUMNS, "cache", "guards"]
    rows = [_time_row(m, ranked) for m in shown]
    # where cold start goes, its title and line on one line above the table
    lead = " ".join(cold[0].text_lines()) if (cold := cold_start_section(ct)) else ""
    table = Table(headers, rows, fold=MAX_ROWS, folded="{n} more compiles")
    return [Section("Compile time", [table], tail=head, lead=lead)]
