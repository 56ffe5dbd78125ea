"""`fxlens report --perfetto FILE`: the Chromium trace events of every rank as one trace.

torch logs its compile timings as `chromium_event` records (payload: one Chrome trace event, "B"/"E"
pairs and instants). Loaded into ui.perfetto.dev or chrome://tracing, the merged file shows every
rank's compiles on one time axis: a rank that compiles late or long is visible at a glance. Each
rank becomes one process (pid = rank) named "rank N". The model skips these records, so they are
read here, straight from the logs, one event at a time, and written as they are read.
"""

from __future__ import annotations

import json
from pathlib import Path

from fxlens.trace.reader import GLOG_PREFIX, rank_from_name

_PREFIX = b'{"chromium_event"'


def _events(log: Path):
    """The payload of every chromium_event record of one log, decoded (torn ones skipped)."""
    with open(log, "rb") as f:
        want, buf = False, []
        for line in f:
            if line.startswith(b"\t"):
                if want:
                    buf.append(line[1:])
                continue
            if want and buf:
                try:
                    yield json.loads(b"".join(buf))
                except ValueError:
                    pass
            m = GLOG_PREFIX.match(line)
            want, buf = bool(m) and line[m.end() :].startswith(_PREFIX), []
        if want and buf:
            try:
                yield json.loads(b"".join(buf))
            except ValueError:
                pass


def write_perfetto(session, dest: str) -> int:
    """Write the merged trace to `dest`; returns how many events it holds."""
    n = 0
    with open(dest, "w", encoding="utf-8") as out:
        out.write('{"displayTimeUnit": "ms", "traceEvents": [\n')
        first = True
        for i, log in enumerate(session.ordered_logs):
            rank = rank_from_name(log)
            pid = rank if rank is not None else i
            meta = {"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": f"rank {pid}"}}
            for ev in (meta, *_events(log)):
                if not isinstance(ev, dict):
                    continue
                ev["pid"] = pid  # torch logs pid 0 on every rank
                out.write(("" if first else ",\n") + json.dumps(ev, default=str))
                first = False
                n += 1
        out.write("\n]}\n")
    return n - len(session.logs)
