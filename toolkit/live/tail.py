"""Follow growing TORCH_TRACE logs: each poll reads only the bytes appended since the last one.

A writer may be caught mid-line (torch writes a record and its payload in one logging call, but a
large one reaches the file in several writes): the bytes after the last newline wait for the next
poll. A record whose payload we need (a Perfetto event, a graph break, recompile reasons) is handed
on once its payload is whole: torch names the payload's md5 in the record (`has_payload`), so a
payload is known complete without waiting for the next record. Records nobody here reads
(tensor descriptions, graphs' code, configs) are skipped on their raw prefix, never decoded.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from fxlens.trace.reader import GLOG_PREFIX, rank_from_name

# the record kinds the live state reads (raw prefix of the JSON body), and whether it needs the payload
_WANTED: tuple[tuple[bytes, bool], ...] = (
    (b'{"chromium_event"', True),
    (b'{"dynamo_start"', False),
    (b'{"str"', False),
    (b'{"dynamo_output_graph"', False),
    (b'{"compilation_metrics"', False),
    (b'{"bwd_compilation_metrics"', False),
    (b'{"artifact": {"name": "dynamo_graph_break_reason"', True),
    (b'{"artifact": {"name": "recompile_reasons"', True),
    # the guard tree names the module behind a library wrapper (HF's `wrapped_func`): read once per
    # compile, only its payload's first lines are kept (see _MAX_KEPT_PAYLOAD)
    (b'{"dynamo_cpp_guards_str"', True),
)
# a payload we keep in memory to check and parse is never larger than this (a break's text is a few
# KB); a larger one is handed on at the next record line, its payload read from disk by span
_MAX_KEPT_PAYLOAD = 1 << 20
# most bytes read in one poll of one file: a poll stays short even when a job wrote 100 MB at once
_MAX_READ = 32 << 20


@dataclass
class RawRecord:
    """One record line of a log, decoded, with where its payload lies in the file."""

    meta: dict
    path: Path
    rank: int | None
    line_no: int
    offset: int  # byte offset of the record's line
    payload: str = ""  # the payload text (TAB prefixes stripped), for kinds that need it
    payload_span: tuple[int, int] | None = None


@dataclass
class _Pending:
    rec: RawRecord
    md5: str
    lines: list[bytes] = field(default_factory=list)
    size: int = 0
    start: int = -1
    end: int = -1


class LogTail:
    """One log file followed from its start; `poll()` returns the records appended since the last poll."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.rank = rank_from_name(self.path)
        self.offset = 0  # bytes consumed (complete lines)
        self.line_no = 0
        self.bytes_read = 0
        self._torn = b""  # the bytes after the last newline: a line still being written
        self._pending: _Pending | None = None

    def poll(self) -> list[RawRecord]:
        """Records completed since the last poll (a torn last line waits for its end)."""
        try:
            with open(self.path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                start = self.offset + len(self._torn)
                if size < start:  # truncated or replaced: read it again from the start
                    self.__init__(self.path)
                    start = 0
                if size == start:
                    return self._flush_pending()
                f.seek(start)
                data = f.read(min(size - start, _MAX_READ))
        except OSError:
            return []
        self.bytes_read += len(data)
        data = self._torn + data
        cut = data.rfind(b"\n") + 1
        self._torn = data[cut:]
        out: list[RawRecord] = []
        pos = self.offset
        for line in data[:cut].splitlines(keepends=True):
            self.line_no += 1
            self._line(line, pos, out)
            pos += len(line)
        self.offset = pos
        out.extend(self._flush_pending())
        return out

    def _line(self, line: bytes, pos: int, out: list[RawRecord]) -> None:
        pend = self._pending
        if line.startswith(b"\t"):
            if pend is not None:
                if pend.start < 0:
                    pend.start = pos
                pend.end = pos + len(line)
                pend.size += len(line)
                if pend.size <= _MAX_KEPT_PAYLOAD:
                    pend.lines.append(line[1:].rstrip(b"\n"))
            return
        if pend is not None:  # the next record: the payload before it is all there is
            out.append(self._close(pend))
            self._pending = None
        m = GLOG_PREFIX.match(line)
        if not m:
            return
        body = line[m.end() :]
        wanted = next((payload for prefix, payload in _WANTED if body.startswith(prefix)), None)
        if wanted is None:
            return
        try:
            meta = json.loads(body)
        except (ValueError, RecursionError):
            return  # a corrupt line: the report says so; the live view just goes on
        if not isinstance(meta, dict):
            return
        rec = RawRecord(meta, self.path, meta.get("rank", self.rank), self.line_no, pos)
        if wanted and isinstance(meta.get("has_payload"), str):
            self._pending = _Pending(rec, meta["has_payload"])
        else:
            out.append(rec)

    def _close(self, pend: _Pending) -> RawRecord:
        rec = pend.rec
        if pend.size <= _MAX_KEPT_PAYLOAD:
            rec.payload = b"\n".join(pend.lines).decode("utf-8", "replace")
        if pend.start >= 0:
            rec.payload_span = (pend.start, pend.end)
        return rec

    def _flush_pending(self) -> list[RawRecord]:
        """The pending record, when its payload is whole (its md5 matches what torch announced)."""
        pend = self._pending
        if pend is None or pend.start < 0 or pend.size > _MAX_KEPT_PAYLOAD:
            return []
        if hashlib.md5(b"\n".join(pend.lines), usedforsecurity=False).hexdigest() != pend.md5:
            return []
        self._pending = None
        return [self._close(pend)]


class TraceTail:
    """Every log of a TORCH_TRACE directory (or one log file), followed; new rank files join when
    they appear."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.tails: dict[Path, LogTail] = {}

    def poll(self) -> list[RawRecord]:
        """New records of every log, file by file (each file's records in order)."""
        for log in self._logs():
            if log not in self.tails:
                self.tails[log] = LogTail(log)
        out: list[RawRecord] = []
        for tail in self.tails.values():
            out.extend(tail.poll())
        return out

    def _logs(self) -> list[Path]:
        if self.path.is_file():
            return [self.path]
        try:
            return sorted(p for p in self.path.glob("*.log") if p.is_file())
        except OSError:
            return []

    @property
    def bytes_read(self) -> int:
        return sum(t.bytes_read for t in self.tails.values())
