"""What a running job's trace says so far: the compiles in progress, counts, and new causes.

`LiveState.update(records)` takes the records `fxlens.live.tail` read since the last poll. A compile
is in progress while torch's Perfetto events for it are open (`chromium_event` B/E pairs: the
outermost is `dynamo` for a frame's compile and `entire_backward_compile` for its backward graph);
a trace without them counts a compile from its `dynamo_start` to its `compilation_metrics`. The
stage shown is the innermost open event named in `STAGES`.

Breaks, recompile reasons and failures are read with the same parsers the report uses
(`fxlens.trace.breaks`, `fxlens.trace.guards`, `fxlens.trace.entry`), and each new cause (a break
site, a recompile cause, a failure) becomes one `Event`, once, with the user's line. Counts fold
ranks together: a compile every rank made counts once (by compile id), as a break site does.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from fxlens.live.tail import RawRecord
from fxlens.trace.breaks import graph_break
from fxlens.trace.entry import module_class, user_entry
from fxlens.trace.guards import FailedGuard, parse_failed_guard
from fxlens.trace.reader import CompileId, Record
from fxlens.trace.records import Frame, frames_from
from fxlens.trace.userframes import short_path

# (Perfetto event torch logs, the stage it stands for); the innermost open one is shown
STAGES: dict[str, str] = {
    "dynamo": "dynamo",
    "bytecode_tracing": "tracing bytecode",
    "build_guards": "building guards",
    "backend_compile": "backend",
    "create_aot_dispatcher_function": "aot_autograd",
    "aot_trace_joint_graph": "aot_autograd: joint graph",
    "min_cut_rematerialization_partition": "aot_autograd: partition",
    "inductor_compile": "inductor",
    "entire_backward_compile": "backward",
    "GraphLowering.run": "inductor: lowering",
    "Scheduler.__init__": "inductor: fusion",
    "code_gen": "inductor: codegen",
    "compile_file": "compiling kernels",
    "async_compile.wait": "waiting for kernels",
}
# the events that span a whole compile: one opening marks a compile in progress
_OUTER = ("dynamo", "entire_backward_compile")
_CID = re.compile(r"^(\d+)/(\d+)")


@dataclass
class Compile:
    """A compile in progress on one rank."""

    compile_id: str  # "0/3"
    rank: int | None
    started: float  # epoch seconds (torch's event time when it logged one)
    function: str = ""
    file: str = ""
    line: int = 0
    open: list[str] = field(default_factory=list)  # open Perfetto events, outermost first

    @property
    def stage(self) -> str:
        """The innermost stage torch is in ("" when its events name none); "backward: ..." while
        torch compiles the backward graph (at the first backward call, after the forward's compile)."""
        stage = next((STAGES[n] for n in reversed(self.open) if n in STAGES), "")
        if self.open[:1] == ["entire_backward_compile"] and stage != "backward":
            return f"backward: {stage}"
        return stage


@dataclass(frozen=True)
class Event:
    """A new cause seen in the trace: printed once above the status line."""

    kind: str  # "break", "recompile", "failure", "limit"
    text: str  # one line, the user's place in it
    rank: int | None
    file: str = ""
    line: int = 0


@dataclass
class _Log:
    """What one log (one rank) has said that later records refer to."""

    strings: dict[int, str] = field(default_factory=dict)
    stacks: dict[str, list[Frame]] = field(default_factory=dict)  # compile id -> entry stack
    code: dict[str, tuple[str, str, int]] = field(default_factory=dict)  # id -> (co_name, file, line)
    active: dict[str, Compile] = field(default_factory=dict)
    skipped: set[str] = field(default_factory=set)  # compiles torch gave up on after a break
    modules: dict[str, str] = field(default_factory=dict)  # frame id -> module class its guards name


@dataclass
class Finished:
    """The last compile that finished (shown when nothing is compiling)."""

    compile_id: str
    function: str
    seconds: float | None


class LiveState:
    """Everything the status line and the TUI's live mode show, updated record by record."""

    def __init__(self, clock=time.time):
        self.clock = clock
        self.logs: dict[Path, _Log] = {}
        self.ranks: set = set()  # ranks (log files' ranks, None for a job without) seen so far
        self.graphs: set[str] = set()
        self.breaks: set[tuple] = set()
        self.recompiles: set[str] = set()
        self.failures: set[tuple] = set()
        self.compile_s = 0.0  # torch's own compile seconds, summed over finished compiles (all ranks)
        self.last: Finished | None = None
        self.events: list[Event] = []  # every event so far, in order
        self._seen: set[tuple] = set()

    # ---- reading -------------------------------------------------------------------------------

    def update(self, records: list[RawRecord]) -> list[Event]:
        """Apply new records; the events they raised (also appended to `events`)."""
        before = len(self.events)
        for rec in records:
            log = self.logs.setdefault(rec.path, _Log())
            self.ranks.add(rec.rank)
            try:
                self._apply(rec, log)
            except (KeyError, TypeError, ValueError, AttributeError, IndexError):
                continue  # a record of a shape we do not know: the report says what it skipped
        return self.events[before:]

    def _apply(self, rec: RawRecord, log: _Log) -> None:
        meta = rec.meta
        cid = _key(meta)
        if "chromium_event" in meta:
            self._perfetto(rec, log)
        elif "str" in meta:
            name, idx = meta["str"]
            log.strings[int(idx)] = str(name)
        elif "dynamo_start" in meta and cid:
            stack = frames_from((meta["dynamo_start"] or {}).get("stack"), log.strings)
            log.stacks[cid] = stack
            if stack:
                log.code.setdefault(cid, (stack[-1].function, stack[-1].file, stack[-1].line))
            c = log.active.get(cid) or self._open(log, cid, rec.rank, None)
            self._place(c, log)
        elif "dynamo_output_graph" in meta and cid:
            self.graphs.add(cid)
        elif "dynamo_cpp_guards_str" in meta and cid:
            cls = module_class(rec.payload)
            if cls:
                log.modules[cid.split("/")[0]] = cls
        elif "compilation_metrics" in meta:
            self._metrics(rec, log, meta["compilation_metrics"] or {}, cid)
        elif "bwd_compilation_metrics" in meta:
            b = meta["bwd_compilation_metrics"] or {}
            key = str(b.get("compile_id") or cid or "")
            if not _has_events(log, key):
                log.active.pop(key, None)
        elif "artifact" in meta and cid:
            name = meta["artifact"].get("name")
            if name == "dynamo_graph_break_reason":
                self._break(rec, log, cid)
            elif name == "recompile_reasons":
                self._recompile(rec, log, cid)

    def _open(self, log: _Log, cid: str, rank, started: float | None) -> Compile:
        c = Compile(cid, rank, started if started is not None else self.clock())
        log.active[cid] = c
        self._place(c, log)
        return c

    def _place(self, c: Compile, log: _Log) -> None:
        e = self._entry(log, c.compile_id)
        if e is not None:
            c.function, c.file, c.line = e

    def _entry(self, log: _Log, cid: str) -> tuple[str, str, int] | None:
        """(user function, file, line) of a compile id, in the user's terms (fxlens.trace.entry)."""
        fid = cid.split("/")[0]
        code = log.code.get(cid) or next((v for k, v in log.code.items() if k.split("/")[0] == fid), None)
        if code is None:
            return None
        # a recompile's reasons come before its own dynamo_start: an earlier compile's stack then
        stack = log.stacks.get(cid) or next((v for k, v in log.stacks.items() if k.split("/")[0] == fid), [])
        cls = log.modules.get(fid, "")
        # module_class reads the class from guard text; this line is what it looks for
        guards = f"source=L['fn'], guard, type=<class '{cls}'>" if cls else ""
        e = user_entry(code[0], code[1], code[2], stack, guards)
        return e.function, e.file, e.line

    def _perfetto(self, rec: RawRecord, log: _Log) -> None:
        ev = json.loads(rec.payload) if rec.payload else {}
        name, ph = ev.get("name"), ev.get("ph")
        m = _CID.match(str((ev.get("args") or {}).get("compile_id") or ""))
        if not m or ph not in ("B", "E") or not name:
            return  # instant events, and kernel compiles of worker threads (no compile id)
        cid = f"{m[1]}/{m[2]}"
        c = log.active.get(cid)
        if ph == "B":
            if c is None:
                if name not in _OUTER:
                    return  # an event after its compile ended (e.g. the pool finishing a kernel)
                ts = ev.get("ts")
                c = self._open(log, cid, rec.rank, float(ts) / 1e6 if isinstance(ts, (int, float)) else None)
            c.open.append(name)
        elif c is not None and name in c.open:
            del c.open[len(c.open) - 1 - c.open[::-1].index(name) :]
            if not c.open:
                del log.active[cid]
                if name == "entire_backward_compile" and self.last and self.last.compile_id == cid:
                    ts = ev.get("ts")
                    if isinstance(ts, (int, float)):
                        self.last = Finished(cid, c.function, float(ts) / 1e6 - c.started)

    def _metrics(self, rec: RawRecord, log: _Log, m: dict, cid: str | None) -> None:
        key = str(m.get("compile_id") or cid or "")
        if m.get("co_name"):
            log.code[key] = (
                str(m["co_name"]),
                str(m.get("co_filename") or ""),
                int(m.get("co_firstlineno") or 0),
            )
        where = self._entry(log, key) or ("?", "", 0)
        secs = m.get("entire_frame_compile_time_s")
        if isinstance(secs, (int, float)):
            self.compile_s += float(secs)
        self.last = Finished(key, where[0], float(secs) if isinstance(secs, (int, float)) else None)
        if not _has_events(log, key):
            log.active.pop(key, None)
        fail, reason = m.get("fail_type"), str(m.get("fail_reason") or "")
        if not fail or key in log.skipped:
            return
        if "recompile limit exceeded" in reason:
            self._event(
                ("limit", where[0], where[1]),
                Event(
                    "limit",
                    f"{where[0]} ({_at(where[1], where[2])}) hit the recompile limit: it runs eagerly from now on",
                    rec.rank,
                    where[1],
                    where[2],
                ),
            )
            return
        self.failures.add((key, fail))
        file = str(m.get("fail_user_frame_filename") or where[1])
        line = int(m.get("fail_user_frame_lineno") or where[2] or 0)
        lines = [ln.strip() for ln in reason.strip().split("\n") if ln.strip()]
        # "backend='x' raised:" says nothing alone: the exception it names is on the next line
        first = " ".join(lines[:2] if len(lines) > 1 and lines[0].endswith(":") else lines[:1])[:160]
        self._event(
            ("failure", fail, file, line, first),
            Event(
                "failure",
                f"compile failed at {_at(file, line)} in {where[0]}: {fail}: {first}",
                rec.rank,
                file,
                line,
            ),
        )

    def _break(self, rec: RawRecord, log: _Log, cid: str) -> None:
        r = Record(
            "artifact:dynamo_graph_break_reason",
            rec.meta,
            CompileId(int(rec.meta["frame_id"]), int(rec.meta["frame_compile_id"])),
            rec.rank,
            rec.path,
            rec.line_no,
            rec.payload_span,
        )
        fn, file, line = self._entry(log, cid) or ("?", "", 0)
        co = (log.code.get(cid) or ("", "", 0))[0]
        gb = graph_break(r, cid, (fn, file, line, co), log.stacks.get(cid, []))
        if gb.skipped_frame:
            log.skipped.add(cid)
        site = (gb.file, gb.line, gb.reason)
        self.breaks.add(site)
        self._event(
            ("break", *site),
            Event(
                "break",
                f"new graph break at {_at(gb.file, gb.line)} in {gb.function}: {gb.reason}",
                rec.rank,
                gb.file,
                gb.line,
            ),
        )

    def _recompile(self, rec: RawRecord, log: _Log, cid: str) -> None:
        from fxlens.report.causefix import CAUSES, format_for_guard  # the report's words for a cause

        self.recompiles.add(cid)
        fn, file, line = self._entry(log, cid) or ("?", "", 0)
        try:
            data = json.loads(rec.payload)
        except ValueError:
            data = rec.payload
        items = data if isinstance(data, list) else [data]
        for item in (str(i) for i in items if str(i).strip()):
            g: FailedGuard = parse_failed_guard(item)
            subject = format_for_guard(CAUSES.get(g.kind, CAUSES["other"])[0], g)
            values = f" (expected {g.expected}, actual {g.actual})" if g.expected and g.actual else ""
            self._event(
                ("recompile", fn, file, g.kind, g.source or g.text),
                Event(
                    "recompile",
                    f"recompile of {fn} ({_at(file, line)}) [{cid}]: {subject}{values}",
                    rec.rank,
                    file,
                    line,
                ),
            )

    def _event(self, key: tuple, event: Event) -> None:
        if key not in self._seen:
            self._seen.add(key)
            self.events.append(event)

    # ---- what the views show -------------------------------------------------------------------

    def compiling(self) -> list[Compile]:
        """The compiles in progress, longest-running first."""
        return sorted((c for log in self.logs.values() for c in log.active.values()), key=lambda c: c.started)

    def compiling_ranks(self) -> list:
        """The ranks with a compile in progress."""
        return sorted({c.rank for c in self.compiling()}, key=lambda r: -1 if r is None else r)

    def counts(self) -> dict[str, int]:
        return {
            "graphs": len(self.graphs),
            "breaks": len(self.breaks),
            "recompiles": len(self.recompiles),
            "failures": len(self.failures),
        }


def _key(meta: dict) -> str | None:
    if "frame_id" not in meta:
        return None
    return f"{meta['frame_id']}/{meta['frame_compile_id']}"


def _has_events(log: _Log, key: str) -> bool:
    """Whether the compile's progress comes from Perfetto events (they, not metrics, close it)."""
    c = log.active.get(key)
    return bool(c and c.open)


def short_file(file: str) -> str:
    """A file as the status line names it: relative to the working directory when inside it, else
    its name alone (a line has no room for another machine's /home/...)."""
    p = short_path(file)
    return Path(p).name if p.startswith("/") else p


def _at(file: str, line: int) -> str:
    return f"{short_file(file)}:{line}" if file else "?"
