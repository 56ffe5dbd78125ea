"""A payload against the md5 torch logged with it (`has_payload`): checked where a payload is read,
remembered per log for the notes, and, for the last record of a log, at scan time (a log cut inside
its last record leaves that payload short).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fxlens.trace.reader import Record

# log file -> (line, kind) of each payload read whose text is not what torch logged
_CORRUPT: dict[Path, list[tuple[int, str]]] = {}


def untabbed(raw: bytes) -> bytes | None:
    """Payload lines as read ("\tl1\n\tl2\n") as the payload torch hashed ("l1\nl2"), in C;
    None when some line lacks its TAB."""
    if not raw:
        return b""
    lines = raw.count(b"\n") + (0 if raw.endswith(b"\n") else 1)
    if not raw.startswith(b"\t") or raw.count(b"\n\t") != lines - 1:
        return None
    return raw[1:].rstrip(b"\n").replace(b"\n\t", b"\n")


def verify_payload(rec: Record, text: bytes) -> None:
    """torch writes each payload's md5 in its record (`has_payload`): a payload whose text does not
    match was corrupted or edited after torch wrote it. Checked where a payload is read, not while a
    log is scanned (hashing every payload of a 100 MB scan cost 23% more CPU, for payloads that
    nothing may read); a mismatch is remembered for `corrupt_notes`."""
    if _matches(rec, text):
        return
    seen = _CORRUPT.setdefault(rec.path, [])
    if (rec.line_no, rec.kind) not in seen:
        seen.append((rec.line_no, rec.kind))


def _matches(rec: Record, text: bytes | None) -> bool:
    want = (rec.meta or rec.full_meta()).get("has_payload")
    if not isinstance(want, str):
        return True
    if text is None:
        return False
    if hashlib.md5(text).hexdigest() == want:
        return True
    # a log whose line ends were converted to CRLF (a Windows checkout)
    return b"\r" in text and hashlib.md5(text.replace(b"\r\n", b"\n").removesuffix(b"\r")).hexdigest() == want


def intact(rec: Record, raw: bytes | None = None) -> bool:
    """Whether a record's payload (`raw`, its TAB-prefixed lines as in the file; read when None) is
    what torch logged: its md5 is the record's `has_payload`. True for a record without one. One
    record's check, for whoever needs it before the payload is read (a log cut inside its last
    record leaves that payload short)."""
    if raw is None and rec.payload_span is not None:
        with open(rec.path, "rb") as f:
            f.seek(rec.payload_span[0])
            raw = f.read(rec.payload_span[1] - rec.payload_span[0])
    return _matches(rec, untabbed(raw) if raw is not None else None)


def forget_reads(paths) -> None:
    """A log opened anew starts with no payload read: the notes of a report are of the payloads its
    own session read, never of what an earlier session of the same log read in this process (the
    TUI, a test run: the same report would otherwise say more the second time)."""
    for path in paths:
        _CORRUPT.pop(Path(path), None)


def corrupt_notes(paths) -> list[str]:
    """One note per log of `paths` with payloads read so far that differ from torch's md5 of them."""
    notes = []
    for path in paths:
        bad = sorted(_CORRUPT.get(Path(path), ()))
        if bad:
            where = ", ".join(f"line {n} ({k})" for n, k in bad[:5])
            more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
            notes.append(
                f"{Path(path).name}: {len(bad)} payload(s) differ from what torch logged (md5 of the"
                f" text is not the record's has_payload: edited, corrupt, or mixed with other output):"
                f" {where}{more}; read as they are"
            )
    return notes


_HAS_PAYLOAD = re.compile(rb'"has_payload": "([0-9a-f]+)"')


def last_payload_short(data, line_span: tuple[int, int] | None) -> bool:
    """Whether the last record line (its span in DATA) promises a payload that the rest of the log
    does not hold whole (its md5 differs), kept or skipped kinds alike."""
    if line_span is None:
        return False
    m = _HAS_PAYLOAD.search(data, line_span[0], line_span[1])
    if m is None:
        return False
    text = untabbed(bytes(data[line_span[1] :]))
    if text is None:
        return True
    want = m.group(1).decode()
    return (
        hashlib.md5(text).hexdigest() != want
        and hashlib.md5(text.replace(b"\r\n", b"\n")).hexdigest() != want
    )
