"""The Session model: a session directory, a TORCH_TRACE directory, or one log file, as data.

Opening never executes or unpickles anything from the session. Logs are parsed on first use
(`ranks`), each log once; payloads are read from disk only when asked for.
"""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

from fxlens.errors import FxlensError
from fxlens.trace.info import check_info
from fxlens.trace.logfiles import (
    check_path,
    irregular_logs,
    kind_of,
    looks_like_trace,
    plain_copies,
    plain_copy,
    rank_logs,
)
from fxlens.trace.model import MODEL_LISTS, RankModel
from fxlens.trace.parallel import read_models
from fxlens.trace.payloads import corrupt_notes, forget_reads
from fxlens.trace.processes import mark_workers
from fxlens.trace.reader import Record, find_logs, rank_from_name
from fxlens.trace.sources import SourceSnapshot
from fxlens.trace.userframes import short_path, show_relative_to, source_line

SESSION_FILE = "session.json"
# held (flock) by the fxlens process writing the session, which writes its pid in it (fxlens.capture.command)
LOCK_FILE = ".lock"
EVENTS_FILE = "events.jsonl"
TRACE_DIR = "trace"


def _rank_order(rank: int | None, name: str) -> tuple:
    return (rank is None, rank if rank is not None else 0, name)


@dataclass
class Session:
    """What `fxlens report`, the TUI, bisect, minify and doctor read."""

    path: Path
    kind: str  # "session", "trace_dir" or "log"
    logs: list[Path]
    info: dict
    notes: list[str] = field(default_factory=list)  # log entries skipped unopened (see irregular_logs)

    def __post_init__(self) -> None:
        forget_reads(self.logs)  # the payload notes are this session's reads (fxlens.trace.payloads)

    @classmethod
    def open(cls, path: str | os.PathLike) -> Session:
        """Open PATH; raises FxlensError with a one-line reason when it is not a session or trace."""
        p = Path(path)
        st = check_path(p)
        if stat.S_ISDIR(st.st_mode) and (p / SESSION_FILE).is_file():
            info = _read_info(p / SESSION_FILE)
            if isinstance(info.get("script"), str) and info["script"]:  # its locations: `model.py:12`
                show_relative_to(Path(info["script"]).parent)
            trace = p / TRACE_DIR
            if not trace.is_dir():
                return cls(p, "session", [], info)
            plain, unread = plain_copies(find_logs(trace))
            logs, notes = rank_logs(trace, plain, others=False)
            return cls(p, "session", logs, info, irregular_logs(trace) + unread + notes)
        if stat.S_ISDIR(st.st_mode):
            logs, unread = plain_copies(find_logs(p))  # gzipped logs read through plain copies
            notes = irregular_logs(p) + unread
            if not logs and notes:
                raise FxlensError(f"{p}: no readable log ({notes[0]})")
            if not logs:
                raise FxlensError(
                    f"{p}: neither an fxlens session nor a TORCH_TRACE directory (no *.log files)"
                )
            logs, others = rank_logs(p, logs)
            return cls(p, "trace_dir", logs, {}, notes + others)
        if not stat.S_ISREG(st.st_mode):  # a FIFO would block forever, /dev/zero would never end
            raise FxlensError(f"{p}: not a regular file ({kind_of(st)})")
        if st.st_size == 0:
            raise FxlensError(f"{p}: empty trace log")
        plain = plain_copy(p)
        if not looks_like_trace(plain):
            raise FxlensError(f"{p}: not a TORCH_TRACE log (no structured-trace records)")
        return cls(p, "log", [plain], {})

    @cached_property
    def ranks(self) -> list[RankModel]:
        """One model per log, sorted by rank (logs without a rank keep their file order)."""
        for _ in self.iter_ranks():
            pass
        return self.__dict__["ranks"]

    @property
    def ordered_logs(self) -> list[Path]:
        """The logs in rank order (rank_2 before rank_10); logs without a rank last."""
        return sorted(self.logs, key=lambda p: _rank_order(rank_from_name(p), p.name))

    def iter_ranks(self) -> Iterator[RankModel]:
        """Yield each log's model as soon as it is read (logs in rank order); then `ranks` is set.

        For callers that show ranks as they arrive (the TUI). Each log is read once. A log that cannot
        be read at all becomes a note in `skipped`, never an exception: one bad rank must not hide
        the others.
        """
        if "ranks" in self.__dict__:
            yield from self.__dict__["ranks"]
            return
        models: list[RankModel] = []
        errors: list[str] = []
        logs = sorted(self.logs, key=lambda p: (rank_from_name(p) is None, rank_from_name(p) or 0, p.name))
        # on all cores for a big job (fxlens.trace.parallel); each parser sees the session's sources
        for _log, model, why in read_models(logs, self.sources):
            if model is None:
                errors.append(why)
                continue
            try:
                _captured_lines(model, self.sources)
            except Exception as e:  # noqa: BLE001
                errors.append(f"{_log.name}: unreadable ({type(e).__name__}: {e})")
                continue
            models.append(model)
            yield model
        if errors:
            if not models:
                models.append(RankModel(rank=None, log=""))
            models[0].skipped.extend(errors)
        mark_workers(models, self._script_pids())
        self.__dict__["ranks"] = sorted(models, key=lambda m: _rank_order(m.rank, m.log))

    @property
    def rank_models(self) -> list[RankModel]:
        """The logs that are ranks (or the job's one process): not those of worker processes the
        script forked or spawned. Ranks are compared with each other; workers never are."""
        return [r for r in self.ranks if not r.worker]

    @property
    def workers(self) -> list[RankModel]:
        """The logs of worker processes (see `mark_workers`)."""
        return [r for r in self.ranks if r.worker]

    def _script_pids(self) -> dict[int, int | None]:
        """pid -> rank of each process `fxlens run` started the script in (its runner's `process`
        events; one per rank under torchrun); empty for a bare TORCH_TRACE."""
        out = {}
        for ev in self.events:
            if ev.get("event") == "process" and isinstance(ev.get("pid"), int):
                rank = ev.get("rank")
                out[ev["pid"]] = int(rank) if isinstance(rank, str) and rank.isdigit() else None
        return out

    def release(self) -> None:
        """Let the read models go (a report built from them keeps what it needs): memory is then
        bounded by the report, not by the logs. A later use of `ranks` reads the logs again."""
        self.__dict__.pop("ranks", None)

    def check_not_empty(self) -> None:
        """Raise FxlensError (one line) when no log holds a single readable record: an empty or
        unreadable trace is bad input. Records without graphs are a valid, empty report."""
        if any(r.records for r in self.ranks):
            return
        where = self.path / TRACE_DIR if self.kind == "session" else self.path
        if not self.logs:
            raise FxlensError(f"{where}: empty trace (no log files)")
        notes = [s for r in self.ranks for s in r.skipped]
        if notes:
            raise FxlensError(f"{where}: no readable trace records ({notes[0]})")
        raise FxlensError(f"{where}: empty trace (no records in {len(self.logs)} log file(s))")

    def _all(self, attr: str) -> list:
        return [item for r in self.ranks for item in getattr(r, attr)]

    def __getattr__(self, name: str) -> list:
        """Every rank's records of one model list (`graphs`, `graph_breaks`, `metrics`, ... one per
        field of the kind table, fxlens.trace.kinds), in rank order."""
        if name in MODEL_LISTS:
            return self._all(name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def extra(self, field: str) -> list:
        """Every rank's records of a kind registered from outside fxlens (`register_kind`)."""
        return [item for r in self.ranks for item in r.extra.get(field, [])]

    @property
    def skipped(self) -> list[str]:
        trace_note = [str(self.info["torch_trace_note"])] if self.info.get("torch_trace_note") else []
        noted = fold_notes(self._all("skipped"))
        # payloads read since (the report's, the TUI's): checked where read (fxlens.trace.reader)
        said = {m.split(":")[0] for m in noted if "differ from what torch logged" in m}
        read_later = [n for n in corrupt_notes(self.logs) if n.split(":")[0] not in said]
        return self.notes + noted + read_later + self._events_skipped + self._source_notes + trace_note

    # -- the user's source lines as they were when the run ended (fxlens.trace.sources) ----------
    @cached_property
    def sources(self) -> SourceSnapshot:
        """The source lines `fxlens run` kept in this session (empty for a bare trace)."""
        return SourceSnapshot.load(self.path) if self.kind == "session" else SourceSnapshot()

    def source_line(self, path: str, line: int, fallback: str = "") -> str:
        """PATH:LINE as it was when the run ended if the session kept it, else as on disk now."""
        kept = self.sources.line(path, line)
        return kept if kept is not None else source_line(path, line, fallback)

    @property
    def _source_notes(self) -> list[str]:
        return [
            f"{short_path(p)} {'changed since the run' if os.path.exists(p) else 'is not here (moved, deleted, or another machine)'}"
            ": its lines are shown as they were when it ran"
            for p in self.sources.changed_files()
        ]

    def records(self, compile_id: str, rank: int | None = None) -> list[Record]:
        """Every record of one compile id (artifacts, graphs, guards) on one rank (default: the first)."""
        model = self._rank_model(rank)
        return list(model.by_compile.get(compile_id, [])) if model is not None else []

    def _rank_model(self, rank: int | None) -> RankModel | None:
        """The first model of `rank` (None: the first model), through an index kept beside the
        ranks it was built from: the report asks once per compile, and a scan of 1024 ranks for
        each was a million steps."""
        ranks = self.ranks
        if rank is None:
            return ranks[0] if ranks else None
        index = self.__dict__.get("_rank_index")
        if index is None or index[0] is not ranks:
            first: dict = {}
            for r in ranks:
                first.setdefault(r.rank, r)
            index = self.__dict__["_rank_index"] = (ranks, first)
        return index[1].get(rank)

    def guards(self, compile_id: str, rank: int | None = None) -> list[str]:
        """The guard lines of a compile id, read from the trace now."""
        recs = self.records(compile_id, rank)
        for rec in recs:
            if rec.kind == "dynamo_cpp_guards_str":
                return [ln for ln in rec.payload().split("\n") if ln.strip()]
        for rec in recs:  # releases before the C++ guard tree (2.3) logged guards as JSON
            if rec.kind == "dynamo_guards":
                return json_guard_lines(rec.payload_json())
        return []

    def artifact(self, compile_id: str, name: str, rank: int | None = None) -> str | None:
        """The payload of a record or artifact (e.g. "dynamo_output_graph", "artifact:fxlens_ir")."""
        for rec in reversed(self.records(compile_id, rank)):
            if rec.kind == name:
                return rec.payload()
        return None

    # -- toolkit events (bisect, minify, doctor), JSON lines beside the trace --------------------
    @cached_property
    def _events_and_skipped(self) -> tuple[list[dict], list[str]]:
        return read_events(self.path / EVENTS_FILE) if self.kind == "session" else ([], [])

    @property
    def events(self) -> list[dict]:
        return self._events_and_skipped[0]

    @property
    def _events_skipped(self) -> list[str]:
        return self._events_and_skipped[1]

    @property
    def rank_ids(self) -> list[int | None]:
        return [r.rank for r in self.ranks]


def fold_notes(notes: list[str], shown: int = 2) -> list[str]:
    """Notes that say the same of many logs ("rank_7.log: 2 payload(s) differ ...") as one note
    naming a few of them and counting the rest: a 1024-rank job gets one line, not 1024."""
    groups: dict[str, list[str]] = {}
    for n in notes:
        name, sep, rest = n.partition(": ")
        key = rest if sep and name.endswith((".log", ".txt")) else n
        groups.setdefault(key, []).append(name if key == rest else "")
    out = []
    for rest, names in groups.items():
        if len(names) == 1 or not names[0]:
            out.extend([f"{names[0]}: {rest}" if names[0] else rest] * (1 if names[0] else len(names)))
            continue
        more = f" and {len(names) - shown} more" if len(names) > shown else ""
        out.append(f"{', '.join(names[:shown])}{more} ({len(names)} logs): {rest}")
    return out


def json_guard_lines(data) -> list[str]:
    """The guard lines of an old `dynamo_guards` record (a JSON list of `{"code": ...}`)."""
    if not isinstance(data, list):
        return []
    out = []
    for g in data:
        code = g.get("code") if isinstance(g, dict) else g
        if isinstance(code, list):
            out.extend(str(c) for c in code if c)
        elif code:
            out.append(str(code))
    return out


def _captured_lines(model: RankModel, snapshot: SourceSnapshot) -> None:
    """Each graph break's source line as the session kept it (the model read it from disk, which
    may have been edited since)."""
    if not snapshot:
        return
    model.graph_breaks = [
        replace(b, source=kept) if (kept := snapshot.line(b.file, b.line)) is not None else b
        for b in model.graph_breaks
    ]


def _read_info(path: Path) -> dict:
    """session.json as a dict; anything else (hostile, torn, not JSON) reads as no info. A field
    every reader trusts with the wrong type is a one-line FxlensError naming it (`check_info`)."""
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode) or st.st_size > 1 << 20:  # a FIFO would block the reader
            return {}
        info = json.loads(path.read_text(errors="replace"))
    except (OSError, ValueError, RecursionError):
        return {}
    return check_info(info, path) if isinstance(info, dict) else {}


def read_events(path: Path) -> tuple[list[dict], list[str]]:
    """Events from a JSON-lines file; a torn or corrupt line is skipped and reported, never fatal.

    Only a regular file is read (a hostile session may hold a FIFO or a link to /dev/zero there).
    """
    try:
        st = path.stat()
    except OSError:
        return [], []
    if not stat.S_ISREG(st.st_mode):
        return [], [f"{path.name}: skipped (not a regular file: {kind_of(st)})"]
    events, bad = [], []
    for n, line in enumerate(path.read_text(errors="replace").split("\n"), 1):
        if not line.strip():
            continue
        try:
            ev = json.loads(line)
        except (ValueError, RecursionError):
            bad.append(n)
            continue
        if isinstance(ev, dict):
            events.append(ev)
    skipped = (
        [f"{path.name}: {len(bad)} unreadable event line(s) skipped (line {', '.join(map(str, bad[:5]))})"]
        if bad
        else []
    )
    return events, skipped


def append_event(session_dir: str | os.PathLike, kind: str, data: dict) -> None:
    """Append one toolkit event to a session, flushed and fsynced: a crash later loses nothing."""
    path = Path(session_dir) / EVENTS_FILE
    line = json.dumps({"event": kind, "time": time.time(), **data}, default=str)
    with open(path, "a") as f:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())


def new_session_dir(
    root: str | os.PathLike, script: str, how: str = "set FXLENS_SESSIONS_DIR to a writable folder"
) -> Path:
    """A fresh `<root>/<timestamp>-<script>` directory (never reused); `how` ends the error line
    when it cannot be created (what the user can pass instead)."""
    stem = Path(script).stem or "script"
    base = Path(root) / f"{time.strftime('%Y%m%d-%H%M%S')}-{stem}"
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    try:
        path.mkdir(parents=True)
    except OSError as e:  # a read-only working directory, a full disk: one line saying what to do
        raise FxlensError(f"{path}: cannot create the session directory ({e.strerror or e}); {how}") from None
    return path


def latest_session(root: str | os.PathLike) -> Path | None:
    sessions = sorted(
        (p for p in Path(root).glob("*") if (p / SESSION_FILE).exists()), key=lambda p: p.stat().st_mtime
    )
    return sessions[-1] if sessions else None


def write_info(session_dir: Path, info: dict) -> None:
    """Write session.json atomically (a reader never sees half a file)."""
    tmp = session_dir / (SESSION_FILE + ".tmp")
    try:
        tmp.write_text(json.dumps(info, indent=2, default=str))
        os.replace(tmp, session_dir / SESSION_FILE)
    except OSError as e:  # a full disk, a read-only or vanished directory: one line, not a traceback
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        raise FxlensError(f"{session_dir}: cannot write {SESSION_FILE}: {e.strerror or e}") from None
