"""Load a Session for the TUI off the event loop, one log (rank) at a time, into a browsable index.

Nothing here touches Textual: the app runs `load_ranks` in a worker thread and posts each rank to
the UI as it arrives, so the first rank paints while the others are still being read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from fxlens.report.build import build_report
from fxlens.report.coldstart import cache_section, cold_start_section
from fxlens.report.distributed import distributed_sections
from fxlens.report.document import Line, Section
from fxlens.report.linetimes import tree_text
from fxlens.report.passes import pass_section
from fxlens.report.special_graphs import special_sections
from fxlens.trace.kinds import table
from fxlens.trace.model import MODEL_LISTS, RankModel
from fxlens.trace.reader import Record, find_logs, frame_of
from fxlens.trace.sanitize import clean
from fxlens.trace.session import Session
from fxlens.trace.userframes import source_line

# Outcome of a compile, worst first; the tree colours a frame by its worst compile.
OUTCOMES = ("failed", "limit", "break", "recompile", "ok")
OUTCOME_STYLE = {
    "failed": "bold red",
    "limit": "magenta",
    "break": "yellow",
    "recompile": "cyan",
    "ok": "green",
}
OUTCOME_LABEL = {
    "failed": "failed",
    "limit": "hit the recompile limit",
    "break": "graph break",
    "recompile": "recompiled",
    "ok": "ok",
}

_RESUME_AT = re.compile(r"^torch_dynamo_resume_in_.+_at_(\d+)$")


def display_function(function: str, co_name: str) -> str:
    """The user's function, with `(resume @57)` when torch compiled the rest of it after a break."""
    if not co_name or co_name == function:
        return function
    m = _RESUME_AT.search(co_name)  # torch_dynamo_resume_in_f_at_57
    return f"{function} (resume @{m[1]})" if m else f"{function} [{co_name}]"


def is_graph_kind(kind: str) -> bool:
    """Whether a record kind holds printed FX graph code (its row in fxlens.trace.kinds says)."""
    return table().is_graph(kind)


def artifact_label(kind: str) -> str | None:
    """How the TUI names a record kind among a compile's artifacts (None: not listed)."""
    return table().label(kind)


@dataclass
class CompileEntry:
    """One compile id on one rank, with its outcome and artifact records."""

    compile_id: str
    rank: int | None
    outcome: str  # the worst of `tags`, or "ok"
    records: list[Record]
    tags: tuple[str, ...] = ()  # every outcome that applies (a recompile can also break)

    def artifacts(self) -> list[tuple[str, Record]]:
        """(label, record) of every artifact worth opening, in log order, those of a subgraph of the
        compile (torch's `subgraph_name`) after the compile's own, grouped by subgraph and labelled
        with its name, as tlparse files them."""
        out: list[tuple[str, Record]] = []
        kernels = 0
        for rec in self.records:
            label = artifact_label(rec.kind)
            if label is None or (rec.payload_span is None and rec.kind != "compilation_metrics"):
                continue
            if rec.kind == "artifact:fxlens_kernel":
                kernels += 1
                label = f"kernel #{kernels}"
            out.append((f"{rec.subgraph}: {label}" if rec.subgraph else label, rec))
        groups = sorted(dict.fromkeys(rec.subgraph for _, rec in out), key=bool)  # the compile's own first
        return sorted(out, key=lambda item: groups.index(item[1].subgraph))


@dataclass
class FrameEntry:
    """A frame (code object) on one rank: the user's function and the compiles of it."""

    frame_id: str  # the frame part of its compile ids ("0", "0#2" after a reset, "!0/1": compiled autograd)
    function: str
    co_name: str
    file: str
    line: int
    compiles: list[CompileEntry] = field(default_factory=list)

    @property
    def outcome(self) -> str:
        return min((c.outcome for c in self.compiles), key=OUTCOMES.index, default="ok")

    @property
    def label(self) -> str:
        where = f"{Path(self.file).name}:{self.line}" if self.file else "?"
        return f"{display_function(self.function, self.co_name)}  {where}"


@dataclass
class RankEntry:
    """One log: its rank and frames."""

    model: RankModel
    frames: list[FrameEntry]

    @property
    def label(self) -> str:
        return f"rank {self.model.rank}" if self.model.rank is not None else "process (no rank)"


def _cid_order(cid: str) -> tuple[int, bool, int, int]:
    """Compile ids in order: first occurrence before a re-run after a reset ("0/0#2"), Dynamo's
    before compiled autograd's ("!0/1/0"), then by frame and compile."""
    base, _, occ = cid.partition("#")
    nums = [int(p) if p.isdigit() else -1 for p in base.lstrip("!").split("/")]
    if base.startswith("!"):
        nums = nums[1:]  # compiled autograd's own id first: ordered by the frame after it
    return (int(occ) if occ.isdigit() else 1, base.startswith("!"), nums[0], nums[1] if len(nums) > 1 else 0)


def _frame_order(key: str) -> tuple[int, bool, int, int]:
    return _cid_order(key.replace("#", "/0#", 1) if "#" in key else key)


def index_rank(model: RankModel) -> RankEntry:
    """Group one rank's compiles by frame, each with its outcome."""
    failed = {
        m.compile_id
        for m in model.metrics
        if m.fail_type and not (m.fail_reason and "recompile limit exceeded" in m.fail_reason)
    }
    limit = {h.compile_id for h in model.limit_hits}
    breaks = {b.compile_id for b in model.graph_breaks}
    recompiled = {r.compile_id for r in model.recompiles}
    where: dict[str, tuple[str, str, str, int]] = {}
    for src in (model.metrics, model.graphs):
        for x in src:
            where.setdefault(x.compile_id, (x.function, x.co_name, x.file, x.line))
    frames: dict[str, FrameEntry] = {}
    for cid in sorted(model.by_compile, key=_cid_order):
        fid = frame_of(cid)
        tags = tuple(
            name
            for name, hit in (
                ("failed", cid in failed),
                ("limit", cid in limit),
                ("break", cid in breaks),
                ("recompile", cid in recompiled),
            )
            if hit
        )
        outcome = tags[0] if tags else "ok"
        frame = frames.get(fid)
        if frame is None:
            fn, co, file, line = where.get(cid, (f"frame {fid}", "", "", 0))
            frame = frames[fid] = FrameEntry(fid, fn, co, file, line)
        frame.compiles.append(CompileEntry(cid, model.rank, outcome, model.by_compile[cid], tags))
    return RankEntry(model, [frames[k] for k in sorted(frames, key=_frame_order)])


@dataclass
class Summary:
    """The session-wide results the list views show (computed once every rank is read)."""

    breaks: list[dict]
    causes: list[dict]
    limit_hits: list[dict]
    divergence: list[dict]
    events: list[dict]
    skipped: list[str]
    runs: list[dict] = field(default_factory=list)  # child runs with a trace (see child_runs)
    rank_groups: dict = field(default_factory=dict)  # ranks grouped by behaviour (fxlens.report.ranks)
    specializations: list[dict] = field(default_factory=list)  # fxlens.report.specializations
    headlines: list[dict] = field(default_factory=list)  # the report's leading verdicts (no graph, ...)
    # the report's compile_times.per_compile, stack_trie and output_code (fxlens.report.compiles, ...)
    per_compile: list[dict] = field(default_factory=list)
    stack_trie: list[dict] = field(default_factory=list)
    output_code: list[dict] = field(default_factory=list)
    # run-time findings across ranks and special records, the report's own sections: collectives,
    # parity, runtime, execution order, export issues, special graphs (fxlens.report)
    sections: list[Section] = field(default_factory=list)
    # compile time as the report heads it: cold start, caches, repeated blocks (the Metrics view)
    cost: list[tuple[str, Section]] = field(default_factory=list)


def load_ranks(session: Session, on_rank: Callable[[RankEntry], None] | None = None) -> Iterator[RankEntry]:
    """Read every log of `session`, yielding each rank's index as soon as it is read.

    When all are read, `session.ranks` is filled in (sorted as Session sorts them), so the
    Session's own lookups (`records`, `guards`, `recompile_causes`) never read the logs again.
    A log that cannot be read at all becomes a note in `session.skipped`, never an exception.
    """
    for model in session.iter_ranks():
        _clean_model(model)
        entry = index_rank(model)
        if on_rank:
            on_rank(entry)
        yield entry


def _clean_model(model: RankModel) -> None:
    """Show every name and reason of a rank with control characters escaped (a trace may be
    hostile: "\x1b[2J" in a function name would clear the screen). Done once, as the rank is read;
    views then only need to keep Rich markup in these strings uninterpreted (Text, or escape())."""
    for attr in MODEL_LISTS:  # every list of records the kind table fills, and the derived ones
        setattr(model, attr, clean(getattr(model, attr)))
    model.extra = clean(model.extra)
    model.skipped = clean(model.skipped)


def summarise(session: Session) -> Summary:
    """The deduplicated breaks, recompile causes, divergence and events of a loaded session."""
    report = clean(build_report(session, with_guards=False))
    return Summary(
        breaks=report["graph_breaks"],
        causes=report["recompile_causes"],
        limit_hits=report["recompile_limit_hits"],
        divergence=report["divergence"],
        events=[e for e in report["events"] if e.get("event") in ("bisect", "minify", "doctor")],
        skipped=list(report["skipped"]),
        runs=child_runs(session),
        rank_groups=report.get("rank_groups") or {},
        specializations=report.get("specializations") or [],
        headlines=report.get("headlines") or [],
        per_compile=report["compile_times"]["per_compile"],
        stack_trie=report.get("stack_trie") or [],
        output_code=report.get("output_code") or [],
        sections=distributed_sections(report) + special_sections(report),
        cost=compile_cost_sections(report),
    )


def compile_cost_sections(report: dict) -> list[tuple[str, Section]]:
    """What cold start cost and where it went, the caches, and repeated blocks (regional
    compilation), as rows of the Metrics view: the report's headlines on compile time
    (fxlens.report.coldstart, fxlens.report.blocks), each `(label, section)`. The label stands in
    the view's compile id column, so it is as short as a compile id (a long one pushed the cache
    column off an 80-column screen).

    Cold start, the caches and the passes are the report's own sections (the builders the
    terminal and Markdown call). A repeated block and Dynamo's seconds by line are the TUI's own
    rows: a row per block, titled, where the report has one untitled section of them all; and the
    by-line tree with each line's source, where the report has a table of the top lines."""
    ct = report.get("compile_times") or {}
    out = [("cold start", sec) for sec in cold_start_section(ct)]
    for sec in cache_section(ct):
        out.append(("caches", Section("Compile caches", sec.lines)))
    for b in report.get("repeated_blocks") or []:
        lines = [Line(b["message"], 0), Line(f"fix: {b['fix']}", 0)]
        out.append(("repeated", Section("Repeated block", lines, gloss="regional compilation")))
    if (lines := report.get("compile_lines") or {}).get("available"):
        out.append(("by line", line_tree_section(lines)))
    out += [("by pass", sec) for sec in pass_section(report)]
    return out


def line_tree_section(sec: dict) -> Section:
    """Dynamo's seconds by source line as the Metrics view's row: the headline, the parts, the tree."""
    parts = ", ".join(f"{k.replace('_', ' ')} {v:.2f} s" for k, v in sec["parts_s"].items() if v)
    lines = [sec.get("headline") or parts, *([parts] if sec.get("headline") else []), ""]
    lines += tree_text(sec["functions"], source_line)
    return Section(f"Dynamo's {sec['dynamo_s']:.2f} s by source line", [Line(x, 0) for x in lines])


# where bisect (runs/NN-label) and minify (children/NAME) keep the sessions of their child runs
RUN_DIRS = ("runs", "children")


def child_runs(session: Session) -> list[dict]:
    """The child runs of a bisect or minify session that kept a trace, in run order.

    Each is `{path, name, exit_code, logs, mb}`; a run is itself a session (session.json, trace/).
    """
    if session.kind != "session":
        return []
    out = []
    for sub in RUN_DIRS:
        d = session.path / sub
        for run in sorted(d.iterdir()) if d.is_dir() else ():
            trace = run / "trace"
            logs = find_logs(trace) if trace.is_dir() else []
            if not logs:
                continue
            try:
                info = json.loads((run / "session.json").read_text())
            except (OSError, ValueError):
                info = {}
            out.append(
                {
                    "path": run,
                    "name": clean(f"{sub}/{run.name}"),
                    "exit_code": clean(info.get("exit_code")) if isinstance(info, dict) else None,
                    "logs": len(logs),
                    "mb": sum(p.stat().st_size for p in logs) / 2**20,
                }
            )
    return out
