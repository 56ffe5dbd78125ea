"""A TORCH_TRACE log's record lines decoded here, without fxlens's reader: the ground truth the
tests of tests/trace hold the reader to."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

# the envelope's keys: every other key of a record line names its kind
META = {
    "frame_id",
    "frame_compile_id",
    "attempt",
    "has_payload",
    "rank",
    "compiled_autograd_id",
    "subgraph_name",
}


def logged_records(path: Path) -> list[tuple[int, dict]]:
    """(line number, metadata) of every record line that decodes (a torn or corrupt one does not)."""
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    out = []
    for n, line in enumerate(raw.split(b"\n"), 1):
        if line.startswith(b"\t") or b"] {" not in line:
            continue
        try:
            out.append((n, json.loads(line.split(b"] ", 1)[1])))
        except ValueError:  # the fixtures of torn and corrupt lines
            continue
    return out


def kind_of(meta: dict) -> str | None:
    """The record's kind as fxlens names it: its key, or `artifact:NAME`."""
    key = next((k for k in meta if k not in META), None)
    return f"artifact:{meta['artifact']['name']}" if key == "artifact" else key
