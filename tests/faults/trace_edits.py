"""Edits of the small real trace in data/tiny.log, for the bad-record and hostile-text tests.

tiny.log is torch 2.13's TORCH_TRACE of a 10-line script (`f` compiled with backend="eager", one
graph break, one recompile: 4 graphs), trimmed of the records the report never reads; its file paths
were rewritten, so each `has_payload` md5 was recomputed (tests/ranks/rank_replicas.rehash): fxlens
checks them, and an unedited copy must read without a note.
"""

from __future__ import annotations

import json
from pathlib import Path

TINY = Path(__file__).parent / "data" / "tiny.log"
PREFIX = "V1203 09:13:19.567000 22732 site-packages/torch/_dynamo/convert_frame.py:303] "
# an OSC title change, a clear-screen and a colour change: what a hostile trace would hold
EVIL = "\x1b]0;pwned\x07\x1b[2J\x1b[31m"


def lines() -> list[str]:
    return TINY.read_text().split("\n")


def record(obj: dict) -> str:
    """One trace line holding `obj` (glog prefix + JSON)."""
    return PREFIX + json.dumps(obj)


def edit_json(text: list[str], kind: str, change, nth: int = 0) -> list[str]:
    """Apply `change(record_dict)` to the nth record whose key is `kind`; returns the new lines."""
    seen = 0
    out = list(text)
    for i, ln in enumerate(out):
        if ln.startswith("\t") or "] {" not in ln:
            continue
        head, body = ln.split("] ", 1)
        d = json.loads(body)
        if kind in d:
            if seen == nth:
                change(d)
                out[i] = head + "] " + json.dumps(d)
                return out
            seen += 1
    raise AssertionError(f"no record {kind} #{nth}")


def write(path: Path, text: list[str]) -> Path:
    path.write_text("\n".join(text))
    return path
