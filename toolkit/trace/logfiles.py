"""The files of a trace folder: which are TORCH_TRACE logs (and ranks), which are not (empty, not a
trace, not a regular file), each said in one note; the one-line error for a path that cannot be
opened at all; and gzipped logs (`*.log.gz`), read through a plain copy made once."""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from pathlib import Path

from fxlens.errors import FxlensError


def looks_like_trace(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    first = next((ln for ln in head.split(b"\n") if ln.strip()), b"")
    return b"] {" in first[:200]


def kind_of(st: os.stat_result) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(st.st_mode):
            return name
    return "not a file"


def check_path(p: Path) -> os.stat_result:
    """stat() PATH, following links; a one-line FxlensError for a missing path or a symlink loop."""
    try:
        return p.stat()
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise FxlensError(f"{p}: symlink loop") from None
        if os.path.lexists(p):
            raise FxlensError(f"{p}: dangling symlink or unreadable ({e.strerror})") from None
        raise FxlensError(f"{p}: no such file or directory") from None


def irregular_logs(d: Path) -> list[str]:
    """Notes for the `*.log` entries of D that are not regular files (a FIFO, a link to /dev/zero,
    a symlink loop): never opened, since reading one would block forever or never end."""
    notes = []
    for q in sorted(d.glob("*.log")):
        try:
            st = q.stat()
        except OSError as e:
            reason = "symlink loop" if e.errno == errno.ELOOP else e.strerror
            notes.append(f"{q.name}: skipped ({reason})")
            continue
        if not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):
            notes.append(f"{q.name}: skipped (not a regular file: {kind_of(st)})")
    return notes


def rank_logs(d: Path, logs: list[Path], others: bool = True) -> tuple[list[Path], list[str]]:
    """The logs of D that are traces, and a note for each file that is not counted as a rank: an
    empty `*.log`, a `*.log` without trace records, any other file. Only when at least one log is a
    trace: a folder of nothing but empty logs stays what it is (an empty trace, said as such)."""
    traces, notes = [], []
    for q in logs:
        try:
            empty = q.stat().st_size == 0
        except OSError:
            empty = True
        if empty:
            notes.append(f"{q.name}: empty, not counted as a rank")
        elif not looks_like_trace(q):
            notes.append(f"{q.name}: not a TORCH_TRACE log (no trace records), not counted as a rank")
        else:
            traces.append(q)
    if not traces:
        return logs, []
    if not others:  # a session's own trace folder: what else fxlens keeps there is not news
        return traces, notes
    names = {q.name for q in logs}
    rest = sorted(
        q.name
        for q in d.iterdir()  # hidden files (a tool's markers) are no one's business
        if q.is_file()
        and q.name not in names
        and not q.name.endswith((".log", ".log.gz"))
        and not q.name.startswith(".")
    )
    notes += [f"{n}: not a *.log, not read" for n in rest[:20]]
    if len(rest) > 20:
        notes.append(f"... and {len(rest) - 20} more file(s) that are not *.log, not read")
    return traces, notes


def plain_copy(path: Path) -> Path:
    """A gzipped log's text as a plain file (made once per version of the .gz, in the temp folder),
    so the reader can seek to each payload; any other path as it is. A .gz that does not decompress
    is a one-line FxlensError."""
    if path.suffix != ".gz":
        return path
    import gzip  # with tempfile (and its random), shutil: only for a gzipped log, not every report's start
    import shutil
    import tempfile
    import zlib

    st = path.stat()
    key = hashlib.sha256(f"{path.resolve()}\0{st.st_size}\0{st.st_mtime_ns}".encode()).hexdigest()[:16]
    dest = Path(tempfile.gettempdir()) / f"fxlens-gunzip-{os.getuid()}" / key / path.name.removesuffix(".gz")
    if dest.is_file():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + f".{os.getpid()}.part")
    try:
        with gzip.open(path, "rb") as src, open(part, "wb") as out:
            shutil.copyfileobj(src, out, 1 << 20)
    except (OSError, EOFError, zlib.error) as e:  # BadGzipFile is an OSError
        part.unlink(missing_ok=True)
        raise FxlensError(f"{path}: not a readable gzip file ({e})") from None
    os.replace(part, dest)  # whole or not at all: a reader never sees half a copy
    return dest


def plain_copies(logs: list[Path]) -> tuple[list[Path], list[str]]:
    """Each log readable as plain text (`plain_copy`), and a note for each .gz that is not."""
    plain, notes = [], []
    for q in logs:
        try:
            plain.append(plain_copy(q))
        except FxlensError as e:
            notes.append(f"{q.name}: {str(e).rsplit(': ', 1)[-1]}, not read")
    return plain, notes
