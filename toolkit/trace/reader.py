"""Read torch's structured trace (TORCH_TRACE) logs lazily: records in, payloads only on demand.

A log is one record per line (a glog prefix, `] `, one JSON object); a record with "has_payload" is
followed by TAB-prefixed payload lines. We keep each payload's byte span and read it only when a
caller asks, and we skip records the report never needs (chromium events, tensor descriptions)
without decoding their JSON: that is what makes a 100 MB log cheap.
"""

from __future__ import annotations

import json
import mmap
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from fxlens.trace.kinds import table
from fxlens.trace.logfiles import plain_copy
from fxlens.trace.payloads import last_payload_short, untabbed, verify_payload
from fxlens.trace.shapes import problem

GLOG_PREFIX = re.compile(rb"^[VIWEC]\d{4} \d\d:\d\d:\d\d\.\d+ +(\d+) [^\]]*\] ")  # group 1: the pid
_RANK_IN_NAME = re.compile(r"rank_(\d+)")
# torch's config snapshots inside compilation metrics (~35 KB a compile, the same every time): kept
# out of memory, or a 1024-rank job holds 1024 copies; `Record.full_meta()` reads them back
_ELIDE_KEYS = ("inductor_config", "dynamo_config", "functorch_config", "compiler_config")
# Metadata keys that are bookkeeping, not the record's kind.
_META_KEYS = {
    "frame_id",
    "frame_compile_id",
    "attempt",
    "has_payload",
    "rank",
    "compiled_autograd_id",
    "subgraph_name",  # the region of a compile the record is of (regional inductor's subgraphs)
}


@dataclass(frozen=True)
class CompileId:
    """Dynamo's compile id `[frame_id/frame_compile_id]` (attempt > 0 for restarts), per rank.

    `autograd` is compiled autograd's id when the compile ran under it (torch prints `!0/3/0`);
    `occurrence` counts the times the same id was logged anew in one log: `torch._dynamo.reset()`
    restarts frame ids at 0, so "0/0" after a reset is another compile (its key is "0/0#2").
    """

    frame_id: int
    frame_compile_id: int
    attempt: int = 0
    autograd: int | None = None
    occurrence: int = 0

    def __str__(self) -> str:
        return f"{self.key}_{self.attempt}" if self.attempt else self.key

    @property
    def key(self) -> str:
        """The compile, restarts folded together ("0/1", "!0/3/0", "0/0#2" after a reset)."""
        base = f"{self.frame_id}/{self.frame_compile_id}"
        if self.autograd is not None:
            base = f"!{self.autograd}/{base}"
        return f"{base}#{self.occurrence + 1}" if self.occurrence else base


def frame_of(key: str) -> str:
    """The frame part of a compile key: "1" for "1/0", "1#2" for "1/3#2", "!0/3" for "!0/3/0"."""
    base, _, occ = key.partition("#")
    head = base.rsplit("/", 1)[0] if base.count("/") >= 1 else base
    return f"{head}#{occ}" if occ else head


@dataclass
class Record:
    """One record of a log: its kind, metadata, and where its payload lies in the file."""

    kind: str  # the record key, or "artifact:<name>" for artifacts
    meta: dict
    compile_id: CompileId | None
    rank: int | None
    path: Path
    line_no: int
    payload_span: tuple[int, int] | None = None  # byte offsets [start, end) of the payload lines
    line_span: tuple[int, int] | None = None  # the record's own line, when `meta` was elided or dropped
    subgraph: str = ""  # torch's `subgraph_name`: the subgraph of its compile the record is of

    def full_meta(self) -> dict:
        """The metadata as logged, config snapshots included (re-read from disk if they were elided)."""
        if self.line_span is None:
            return self.meta
        start, end = self.line_span
        with open(self.path, "rb") as f:
            f.seek(start)
            line = f.read(end - start)
        m = GLOG_PREFIX.match(line)
        try:
            return json.loads(line[m.end() :]) if m else self.meta
        except ValueError:
            return self.meta

    def slim(self) -> None:
        """Drop the metadata from memory, once read into the model; `full_meta()` reads it back."""
        if self.line_span is not None:
            self.meta = {}

    def payload(self) -> str:
        """The payload text (TAB prefixes stripped), read from disk now."""
        if self.payload_span is None:
            return ""
        start, end = self.payload_span
        with open(self.path, "rb") as f:
            f.seek(start)
            raw = f.read(end - start)
        text = untabbed(raw)
        if text is None:  # a line without its TAB (a span not from scan_log): line by line
            return "\n".join(
                line[1:].removesuffix("\r")
                for line in raw.decode("utf-8", "replace").split("\n")
                if line.startswith("\t")
            )
        verify_payload(self, text)
        # (a CRLF line end, from a converted log, is not the payload's)
        plain = text.replace(b"\r\n", b"\n").removesuffix(b"\r") if b"\r" in text else text
        return plain.decode("utf-8", "replace")

    def payload_json(self):
        """The payload decoded as JSON, or None if it is not valid JSON."""
        try:
            return json.loads(self.payload())
        except ValueError:
            return None


@dataclass
class LogScan:
    """What reading one log file produced: the records kept, interned file names, what was skipped."""

    path: Path
    rank: int | None
    records: list[Record] = field(default_factory=list)
    strings: dict[int, str] = field(default_factory=dict)
    bad: list[tuple[int, str]] = field(default_factory=list)  # (line number, why) of skipped records
    lines: int = 0
    pid: int | None = None  # the process that wrote the log (its first record's prefix)
    # compile id -> times it was logged anew (after torch._dynamo.reset()); ids whose compile ended
    occurrences: dict[str, int] = field(default_factory=dict)
    ended: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)  # what the user should know about this log
    corrupt: list[tuple[int, str]] = field(default_factory=list)  # (line, kind): payloads failing md5
    truncated: int | None = None  # the line of the record the log ends inside (cut while written)


def rank_from_name(path: Path) -> int | None:
    m = _RANK_IN_NAME.search(path.name)
    return int(m.group(1)) if m else None


def _compile_id(meta: dict) -> CompileId | None:
    if "frame_id" not in meta or meta["frame_id"] is None:
        return None
    try:
        ca = meta.get("compiled_autograd_id")
        return CompileId(
            int(meta["frame_id"]),
            int(meta["frame_compile_id"]),
            int(meta.get("attempt") or 0),
            int(ca) if ca is not None else None,
        )
    except (TypeError, ValueError):
        return None


def _occurrence(cid: CompileId | None, kind: str, scan: LogScan) -> CompileId | None:
    """The compile id with its occurrence: a `dynamo_start` (or the `recompile_reasons` torch logs
    just before it) for an id whose compile already ended (its compilation_metrics was logged) opens
    a new compile of that id (after a reset)."""
    if cid is None:
        return None
    base = cid.key
    occ = scan.occurrences.get(base, 0)
    # a compile opens with its dynamo_start, or just before it with the reasons it recompiles for
    if kind in ("dynamo_start", "artifact:recompile_reasons") and base in scan.ended:
        occ += 1
        scan.occurrences[base] = occ
        scan.ended.discard(base)
    elif kind == "compilation_metrics":
        scan.ended.add(base)
    return replace(cid, occurrence=occ) if occ else cid


def scan_log(path: str | Path) -> LogScan:
    """Read one TORCH_TRACE log, keeping every record the report and TUI use.

    Unreadable records (a torn last line, garbage, JSON nested too deep to decode, a record whose
    shape the model cannot use, a record without its payload) are counted in `bad` with their line
    number and why; they never stop the scan.
    """
    path = plain_copy(Path(path))  # a gzipped log is read through its plain copy
    scan = LogScan(path=path, rank=rank_from_name(path))
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return scan
        # mapped, not read: a 100 MB log is not copied into memory, and the regular expression
        # below steps over payload lines in C (a Python loop over every line was most of a scan)
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            last, last_end = _scan(data, scan)
            tail = bytes(data[data.rfind(b"\n", 0, max(0, len(data) - 1)) + 1 :])
            # the last record's payload is checked now (the others where they are read): a log
            # cut at a line boundary inside it leaves it short of torch's md5
            short = last_payload_short(data, last_end)
    _note_cut(scan, last, [(last, "payload")] if short else [], tail)
    return scan


# the payload lines (TAB first) before a record line, taken whole line by line, then the record line
# with its end of line (empty at the end of the file): the search steps over a payload a line at a
# time, not trying each of its bytes as the start of a record line
_RECORD_LINE = re.compile(rb"^(?:\t[^\n]*(?:\n|\Z))*+([^\n]*\n?)", re.M)


def _scan(data, scan: LogScan) -> tuple[int, tuple[int, int] | None]:
    """Scan the mapped log into SCAN; (the last record line's number, its span)."""
    pending: Record | None = None  # a record waiting for its payload lines
    last, last_span = 0, None
    line_no = 0
    prev_end = 0  # where the last record line ended: its payload lines, if any, start there
    for m in _RECORD_LINE.finditer(data):
        start, end = m.span(1)
        if start == end:  # the empty match at the end of the file
            break
        if start > prev_end:  # payload lines since the last record line
            line_no += data[prev_end:start].count(b"\n")
        line_no += 1
        if pending is not None:
            _close_payload(pending, prev_end if start > prev_end else -1, start, scan)
            pending = None
        rec = _read_record(m.group(1), line_no, scan, start)
        last, last_span = line_no, (start, end)
        if rec is not None and "has_payload" in rec.meta:
            pending = rec
        prev_end = end
    size = len(data)
    if pending is not None:
        _close_payload(pending, prev_end if size > prev_end else -1, size, scan)
    tail = data[prev_end:]  # payload lines after the last record line
    scan.lines = line_no + tail.count(b"\n") + (1 if tail and not tail.endswith(b"\n") else 0)
    return last, last_span


def _note_cut(scan: LogScan, last: int, corrupt: list[tuple[int, str]], tail: bytes) -> None:
    """A log that ends inside its last record was cut while torch wrote it (a killed job, a full
    disk, a partial copy): said as such, not only as a torn line or a checksum. Evidence: the last
    record is damaged and either the file stops mid-line (torch ends every line) or the damage is
    its payload (a cut at a line boundary leaves it short of its md5, or absent)."""
    if not last:
        return
    mid_line = not tail.endswith(b"\n")
    torn = any(n == last for n, _ in scan.bad)
    short_payload = any(n == last for n, _ in corrupt) or any(
        n == last and "no payload" in why for n, why in scan.bad
    )
    if mid_line and not (torn or short_payload) and not tail.startswith(b"\t"):
        try:  # a kind the reader skips undecoded (chromium_event): decode this one line
            m = GLOG_PREFIX.match(tail)
            json.loads(tail[m.end() :] if m else b"")
        except (ValueError, RecursionError):
            torn = True
    if short_payload or (mid_line and torn):
        scan.truncated = last
        scan.notes.insert(
            0,
            f"{scan.path.name} is truncated: it ends mid-record (line {last}), as a job killed while"
            f" writing it leaves a log; the records before it are read",
        )


def _read_record(line: bytes, line_no: int, scan: LogScan, offset: int = 0) -> Record | None:
    """One record line: kept in `scan.records` (and returned), interned into `scan.strings`, skipped
    as never needed, or counted in `scan.bad` with why."""
    if not line.strip():
        return None
    m = GLOG_PREFIX.match(line)
    if not m:
        scan.bad.append((line_no, "no trace record prefix"))
        return None
    if scan.pid is None:
        scan.pid = int(m.group(1))
    body = line[m.end() :]
    known = table()  # what to skip unread, each kind's shape check, what to slim (fxlens.trace.kinds)
    if body.startswith(known.skip_prefixes):
        return None
    if any(body.startswith(prefix) and needle not in body for prefix, needle in known.read_only_with):
        return None
    try:
        meta = json.loads(body)
    except ValueError:
        scan.bad.append((line_no, "not JSON (torn or corrupt)"))
        return None
    except RecursionError:  # a hostile line nested [[[[...]]]] deeper than the decoder goes
        scan.bad.append((line_no, "JSON nested too deeply"))
        return None
    if not isinstance(meta, dict):
        scan.bad.append((line_no, "not a JSON object"))
        return None
    kinds = [k for k in meta if k not in _META_KEYS]
    if not kinds:
        return None
    kind = kinds[0]
    why = problem(kind, meta, known.checks.get(kind))
    if why:
        scan.bad.append((line_no, why))
        return None
    if kind == "str":
        name, idx = meta["str"]
        scan.strings[idx] = name
        return None
    if kind == "artifact":
        kind = "artifact:" + meta["artifact"]["name"]
    rank = meta.get("rank", scan.rank)
    if rank != scan.rank and scan.rank is not None and "rank" in meta:
        _rank_mismatch(scan, rank, line_no)
        rank = scan.rank
    rec = Record(kind, meta, _occurrence(_compile_id(meta), kind, scan), rank, scan.path, line_no)
    if "subgraph_name" in meta:
        rec.subgraph = str(meta["subgraph_name"])
    body_of_kind = meta.get(kind.split(":")[0])
    if kind in known.slim:
        rec.line_span = (offset, offset + len(line))
    if len(line) > 4096 and isinstance(body_of_kind, dict):
        for k in _ELIDE_KEYS:
            if isinstance(body_of_kind.get(k), str) and len(body_of_kind[k]) > 256:
                body_of_kind[k] = f"<{len(body_of_kind[k])} characters, shown with the whole record>"
                rec.line_span = (offset, offset + len(line))
    scan.records.append(rec)
    return rec


def _rank_mismatch(scan: LogScan, rank, line_no: int) -> None:
    """A record whose rank is not the file name's: said once per log. The name's rank is used, as
    tlparse does, so that every record of one file is one rank (a log copied or renamed to another
    rank's name is the usual cause; the note says which file)."""
    if not any(n.startswith(f"{scan.path.name}: file name says rank") for n in scan.notes):
        scan.notes.append(
            f"{scan.path.name}: file name says rank {scan.rank}, its records say rank {rank}"
            f" (line {line_no}); the file name's rank is used"
        )


def _close_payload(rec: Record, start: int, end: int, scan: LogScan) -> None:
    if start < 0:
        scan.bad.append((rec.line_no, f"{rec.kind} record has no payload (truncated?)"))
        return
    rec.payload_span = (start, end)


def find_logs(path: str | Path) -> list[Path]:
    """The TORCH_TRACE log files under a directory (one per process/rank), or the file itself."""
    p = Path(path)
    if p.is_file():
        return [p]
    logs = sorted(q for q in [*p.glob("*.log"), *p.glob("*.log.gz")] if q.is_file())
    return logs


def iter_records(path: str | Path) -> Iterator[Record]:
    """Every kept record of every log under `path`."""
    for log in find_logs(path):
        yield from scan_log(log).records
