"""Build the Session model's records from the scanned records of one TORCH_TRACE log (one rank)."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field, make_dataclass

from fxlens.trace import compile_cost
from fxlens.trace.breaks import restart_breaks
from fxlens.trace.entry import Entry, user_entry
from fxlens.trace.graph_code import parse_graph
from fxlens.trace.kinds import KINDS, NO_ID, table
from fxlens.trace.kindtable import ReadContext, model_fields
from fxlens.trace.metrics_record import metrics_record
from fxlens.trace.payloads import corrupt_notes
from fxlens.trace.reader import LogScan, Record, frame_of
from fxlens.trace.records import Frame, Graph, RecompileLimitHit, frames_from
from fxlens.trace.shapes import skipped_note
from fxlens.trace.userfiles import is_user_file
from fxlens.trace.userframes import is_resume, user_function

_LIMIT = re.compile(r"exceeding the (?P<type>\w+) cache size limit \(currently set to (?P<n>\d+)\)")


@dataclass
class FrameInfo:
    """What a compile compiled: the code object's name, file and first line."""

    co_name: str = ""
    file: str = ""
    line: int = 0


@dataclass
class _RankLog:
    """What one log is besides the lists its records fill (those come from the kind table)."""

    rank: int | None
    log: str
    limit_hits: list[RecompileLimitHit] = field(default_factory=list)  # from the metrics, after the pass
    # compile id -> its records (artifacts, guards, graphs), for the TUI and `guards()`
    by_compile: dict[str, list[Record]] = field(default_factory=lambda: defaultdict(list))
    skipped: list[str] = field(default_factory=list)
    records: int = 0  # records read (file-name entries included): 0 means an empty trace
    # compile id -> the stack that entered it (dynamo_start, file names resolved), for the stack trie
    entry_stacks: dict[str, list[Frame]] = field(default_factory=dict)
    pid: int | None = None  # the process that wrote the log
    # a process the script forked or spawned (a DataLoader worker, a multiprocessing pool): not a
    # rank; `worker_of` is the rank it belongs to (None: the job's one process, or not known)
    worker: bool = False
    worker_of: int | None = None
    unknown_kinds: dict[str, int] = field(default_factory=dict)  # record kinds no row knows: counted
    # field -> records, filled by the readers of kinds registered from outside fxlens
    extra: dict[str, list] = field(default_factory=dict)
    truncated: int | None = None  # the log ends inside this line's record (fxlens.trace.reader)


#: Everything one log (one process / rank) says, as records: a `_RankLog` with one list per model
#: field of the kind table (graphs, graph_breaks, recompiles, metrics, specials, ...)
RankModel = make_dataclass(
    "RankModel",
    [(name, list[typ], field(default_factory=list)) for name, typ in model_fields(KINDS).items()],
    bases=(_RankLog,),
)
RankModel.__module__ = __name__  # pickled across the reading processes by its name
RankModel.__doc__ = "Everything one log (one process / rank) says, as records."
#: the model's lists of records, each kind's and the derived ones
MODEL_LISTS: tuple[str, ...] = (*model_fields(KINDS), "limit_hits")


def build_rank_model(scan: LogScan) -> RankModel:
    """The rank's records. A record the model still cannot use (its shape was checked when read, so
    this is a payload: e.g. a graph break naming a file with a NUL byte) is skipped and counted, like
    an unreadable line: one bad record never costs the rest of the log."""
    bad = list(scan.bad)
    model = _build(scan, bad)
    # what could not be read first (the TUI's notice shows the first note), then what was read
    # with a caveat (a payload's md5, a rank that is not the file name's)
    model.skipped = ([skipped_note(scan.path.name, bad)] if bad else []) + list(scan.notes)
    model.skipped += corrupt_notes([scan.path])  # payloads read while the model was built
    model.records = len(scan.records) + len(scan.strings)
    model.truncated = scan.truncated
    return model


def _metrics_key(rec: Record, m: dict) -> str:
    """The compile a metrics record belongs to: its record's id (which knows the occurrence after a
    reset and compiled autograd's prefix), else the id the metrics name, else NO_ID (AOTInductor)."""
    if rec.compile_id is not None:
        return rec.compile_id.key
    return str(m.get("compile_id") or NO_ID)


def _unusable(rec: Record, e: Exception) -> tuple[int, str]:
    return rec.line_no, f"{rec.kind} record unusable ({type(e).__name__}: {e})"[:200]


@dataclass
class _Frames:
    """Which code each compile id compiled, from the log's first pass; `where` answers per compile id."""

    frames: dict[str, FrameInfo] = field(default_factory=dict)
    frame_name: dict[str, FrameInfo] = field(default_factory=dict)  # frame_id -> its first named compile
    entry_stacks: dict[str, list[Frame]] = field(default_factory=dict)
    guard_recs: dict[str, Record] = field(default_factory=dict)  # compile id -> its guard tree
    _entries: dict[str, Entry] = field(default_factory=dict)

    def name_frames(self) -> None:
        for key, info in self.frames.items():
            fid = frame_of(key)
            if info.co_name and fid not in self.frame_name:
                self.frame_name[fid] = info

    def _info(self, key: str) -> FrameInfo:
        info = self.frames.get(key)
        if info is None or not info.co_name:
            info = self.frame_name.get(frame_of(key), FrameInfo())
        return info

    def entry(self, key: str) -> Entry:
        """The user's view of a compile id: function, file, line, and the library frame if any."""
        if key not in self._entries:
            info = self._info(key)
            line = info.line
            fn = user_function(info.co_name)
            if is_resume(info.co_name):  # the user's def line, from a compile of the original function
                orig = next(
                    (f for f in self.frames.values() if f.co_name == fn and f.file == info.file), None
                )
                line = orig.line if orig else line
            guards = ""
            if info.file and not is_user_file(info.file):  # only a library frame needs the guard tree
                rec = self.guard_recs.get(key) or next(
                    (r for k, r in self.guard_recs.items() if frame_of(k) == frame_of(key)), None
                )
                guards = rec.payload() if rec is not None else ""
            stack = self.entry_stacks.get(key) or next(
                (s for k, s in self.entry_stacks.items() if frame_of(k) == frame_of(key)), []
            )
            self._entries[key] = user_entry(info.co_name, info.file, line, stack, guards)
        return self._entries[key]

    def where(self, key: str) -> tuple[str, str, int, str]:
        """(user function, file, line, co_name) for a compile id."""
        e = self.entry(key)
        return e.function, e.file, e.line, self._info(key).co_name


def _build(scan: LogScan, bad: list[tuple[int, str]]) -> RankModel:
    model = RankModel(rank=scan.rank, log=str(scan.path), pid=scan.pid)
    frames = _index_frames(scan, model, bad)
    model.entry_stacks = frames.entry_stacks
    graph_recs = _read_records(scan, model, frames, bad)
    compile_cost.attach(model, scan.path)  # cache artifacts; chromium times where metrics have none
    _add_limit_hits(model)
    model.graph_breaks += restart_breaks(model.metrics, model.graph_breaks)
    _add_graphs(model, graph_recs, frames, bad)
    slim = table().slim
    for rec in scan.records:  # what the model read into its records leaves memory (fxlens.trace.reader)
        if rec.kind in slim:
            rec.slim()
    return model


def _index_frames(scan: LogScan, model: RankModel, bad: list[tuple[int, str]]) -> _Frames:
    """First pass: records by compile id, the rank, and which frame each compile id compiled."""
    found = _Frames()
    kinds = table()
    for rec in scan.records:
        try:
            if kinds.get(rec.kind) is None:
                model.unknown_kinds[rec.kind] = model.unknown_kinds.get(rec.kind, 0) + 1
            if rec.compile_id is not None:
                model.by_compile[rec.compile_id.key].append(rec)
                if rec.rank is not None and model.rank is None:
                    model.rank = rec.rank
            elif rec.kind in kinds.no_id:  # an AOTInductor compile: no Dynamo, no compile id
                model.by_compile[NO_ID].append(rec)
            if rec.kind == "dynamo_start":
                _note_start(rec, scan, found)
            elif rec.kind == "dynamo_cpp_guards_str" and rec.compile_id:
                found.guard_recs[rec.compile_id.key] = rec
            elif rec.kind == "compilation_metrics":
                m = rec.meta["compilation_metrics"] or {}
                key = _metrics_key(rec, m)
                info = found.frames.setdefault(key, FrameInfo())
                info.co_name = m.get("co_name") or info.co_name
                info.file = m.get("co_filename") or info.file
                info.line = int(m.get("co_firstlineno") or info.line or 0)
        except Exception as e:  # noqa: BLE001 -- a shape the checks did not foresee
            bad.append(_unusable(rec, e))
    found.name_frames()
    return found


def _note_start(rec: Record, scan: LogScan, found: _Frames) -> None:
    """A dynamo_start record: the entry stack of its compile, whose last frame is the compiled one."""
    stack = frames_from((rec.meta["dynamo_start"] or {}).get("stack"), scan.strings)
    if stack and rec.compile_id:
        found.entry_stacks[rec.compile_id.key] = stack
        info = found.frames.setdefault(rec.compile_id.key, FrameInfo())
        info.co_name = info.co_name or stack[-1].function
        info.file = info.file or stack[-1].file
        info.line = info.line or stack[-1].line


def _read_records(
    scan: LogScan, model: RankModel, frames: _Frames, bad: list[tuple[int, str]]
) -> dict[str, Record]:
    """Second pass: each record through its kind's reader (fxlens.trace.kinds), what it returns into
    its row's field; then the metrics held for after the pass. Returns each compile id's graph
    record (graphs are built last, once the metrics hold their node counts)."""
    kinds = table()
    ctx = ReadContext(model, scan, frames.where, frames.entry_stacks)
    for rec in scan.records:
        row = kinds.get(rec.kind)
        if row is None or row.read is None:
            continue
        try:
            ctx.cid = rec.compile_id.key if rec.compile_id else None
            got = row.read(rec, ctx)
            if got is not None and row.field:
                into = _list_of(model, row)
                into.extend(got) if isinstance(got, list) else into.append(got)
        except Exception as e:  # noqa: BLE001 -- a shape the checks did not foresee
            bad.append(_unusable(rec, e))
    backward = ctx.held.get("backward", {})
    for rec in ctx.held.get("metrics", []):
        try:
            key = _metrics_key(rec, rec.meta["compilation_metrics"] or {})
            model.metrics.append(metrics_record(rec, key, frames.where, backward))
        except Exception as e:  # noqa: BLE001 -- a shape the checks did not foresee
            bad.append(_unusable(rec, e))
    return ctx.held.get("graphs", {})


def _list_of(model: RankModel, row) -> list:
    """The list a row fills: the model's own for fxlens's rows, `extra`'s for an outside reader's."""
    return getattr(model, row.field) if row.source == "fxlens" else model.extra.setdefault(row.field, [])


def _add_limit_hits(model: RankModel) -> None:
    """Compiles that stopped at the recompile limit: their frames run eagerly from then on."""
    for m in model.metrics:
        if m.fail_reason and "recompile limit exceeded" in m.fail_reason:
            lim = _LIMIT.search(m.fail_reason)
            model.limit_hits.append(
                RecompileLimitHit(
                    m.compile_id,
                    m.rank,
                    m.function,
                    m.file,
                    m.line,
                    int(lim["n"]) if lim else None,
                    lim["type"] if lim else "recompile_limit",
                )
            )


def _add_graphs(
    model: RankModel, graph_recs: dict[str, Record], frames: _Frames, bad: list[tuple[int, str]]
) -> None:
    metrics = {m.compile_id: m for m in model.metrics}
    for cid, rec in graph_recs.items():
        try:
            fn, file, line, co = frames.where(cid)
            m = metrics.get(cid)
            code = rec.payload()
            if file and not is_user_file(file):  # torch's own wrapper (torch.func.grad, vmap) with
                # no user frame on the stack: placed at the first user line the graph traced
                fn, file, line = _first_user_line(code) or (fn, file, line)
            ops = _graph_ops(code)
            sizes = (rec.meta.get("dynamo_output_graph") or {}).get("sizes") or {}
            num_nodes = m.graph_node_count if m and m.graph_node_count is not None else len(sizes) + 1
            model.graphs.append(
                Graph(
                    cid,
                    rec.rank,
                    fn,
                    file,
                    line,
                    int(num_nodes),
                    len(ops),
                    tuple(dict.fromkeys(ops)),
                    co,
                    frames.entry(cid).library,
                )
            )
        except Exception as e:  # noqa: BLE001 -- a shape the checks did not foresee
            bad.append(_unusable(rec, e))


# the source comments torch prints in a graph's code: `# File: /path/x.py:3 in loss, code: ...`
_GRAPH_FILE = re.compile(r"# File: (?P<file>.+?):(?P<line>\d+) in (?P<fn>[^,\s]+)")


def _first_user_line(code: str) -> tuple[str, str, int] | None:
    """(function, file, line) of the first line of the user's own code a graph traced, if any."""
    for m in _GRAPH_FILE.finditer(code):
        if is_user_file(m["file"]):
            return m["fn"], m["file"], int(m["line"])
    return None


def _graph_ops(code: str) -> list[str]:
    """The call targets of a Dynamo graph's printed code, one per op node (methods as `Tensor.<name>`)."""
    return [
        "Tensor." + n.target if n.op == "call_method" else n.target
        for n in parse_graph(code)
        if n.op in ("call_function", "call_method", "call_module")
    ]
