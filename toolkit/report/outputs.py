"""Paths the user names for fxlens to write (`--json`, `--out`, `--report`, `--perfetto`,
`--session`, `FXLENS_SESSIONS_DIR`): checked before any work, written with one line on failure.

Every command checks its outputs here first, so a read-only place costs one line and exit 2, not a
long run that ends in a traceback. The check writes: permission bits say nothing when running as
root (a read-only mount, an immutable folder or /sys still refuse), so it creates the file (or a
probe file in the folder) and removes what it created.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from fxlens.errors import FxlensError


def _existing_ancestor(p: Path) -> Path:
    """The nearest of P's parents that exists (a folder, or a file where a folder was needed),
    spelled as the user spelled P (`notes`, not the absolute path)."""
    for a in (*p.parents, *p.absolute().parents):
        if a.exists():
            return a
    return Path("/")


def _refuse(option: str, dest, why: str) -> FxlensError:
    return FxlensError(f"{option} {dest}: {why}")


def _not_writable(option: str, dest, e: OSError) -> FxlensError:
    return _refuse(option, dest, f"not writable ({e.strerror or e})")


def check_writable(dest: str | os.PathLike | None, option: str = "--json") -> None:
    """Refuse, before any work is done, a file path that cannot be written: a directory, a missing
    folder, a path under a file, a read-only place (one line, exit 2). "-" (stdout) is fine."""
    if not dest or str(dest) == "-":
        return
    p = Path(dest)
    if p.is_dir():
        raise _refuse(option, dest, "is a directory")
    if not p.parent.is_dir():
        anc = _existing_ancestor(p)
        if not anc.is_dir():
            raise _refuse(option, dest, f"{anc} is a file, not a folder")
        raise _refuse(option, dest, f"no such directory {p.parent}")
    existed = os.path.lexists(p)
    if existed and not p.is_file():  # /dev/stdout, a FIFO: opening one to check it could block
        if not os.access(p, os.W_OK):
            raise _refuse(option, dest, "not writable")
        return
    try:
        with open(p, "a"):  # appends nothing: an existing file keeps its bytes
            pass
    except OSError as e:
        raise _not_writable(option, dest, e) from None
    if not existed:
        with contextlib.suppress(OSError):
            p.unlink()


def check_folder_writable(dest: str | os.PathLike | None, option: str = "--session") -> None:
    """The same for a folder fxlens will create (or fill): it, or the nearest folder above it that
    exists, must take a new file."""
    if not dest:
        return
    p = Path(dest)
    if p.exists() and not p.is_dir():
        raise _refuse(option, dest, "is a file, not a folder")
    where = p if p.is_dir() else _existing_ancestor(p)
    if not where.is_dir():
        raise _refuse(option, dest, f"{where} is a file, not a folder")
    import tempfile  # here: with random and shutil, ~5 ms that a report to stdout never needs

    try:
        fd, probe = tempfile.mkstemp(prefix=".fxlens-write-check-", dir=where)
    except OSError as e:
        raise _not_writable(option, dest, e) from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)


@contextlib.contextmanager
def open_output(dest: str | os.PathLike, option: str) -> Iterator:
    """`open(dest, "w")`, whose failure (a full disk, a place that became read-only while the work
    ran) is one line naming the option, never a traceback."""
    try:
        with open(dest, "w", encoding="utf-8") as f:
            yield f
    except OSError as e:
        raise _refuse(option, dest, f"cannot write ({e.strerror or e})") from None


def write_text(text: str, dest: str | os.PathLike, option: str) -> None:
    """TEXT to DEST (see `open_output`)."""
    with open_output(dest, option) as f:
        f.write(text)


def write_json(data: dict, dest: str, option: str = "--json") -> None:
    """DATA as JSON, streamed to `dest` ("-": stdout): never the whole text in memory."""
    if dest == "-":
        json.dump(data, sys.stdout, indent=1, default=str)
        sys.stdout.write("\n")
        return
    with open_output(dest, option) as f:
        json.dump(data, f, indent=1, default=str)
        f.write("\n")


def add_format_arguments(parser: argparse.ArgumentParser) -> None:
    """`--format text|markdown|html` and `--report FILE`, for bisect and minify (a verdict to paste)."""
    parser.add_argument(
        "--format",
        choices=("text", "markdown", "html"),
        default="text",
        help="also render the verdict, culprit, reproducer and environment as markdown or html (for a bug)",
    )
    parser.add_argument(
        "--report", metavar="FILE", help="write the --format markdown/html output to FILE (default: stdout)"
    )


def write_formatted(text: str, dest: str | None) -> None:
    """A markdown/html verdict to FILE, or to stdout after the text output."""
    if dest and dest != "-":
        write_text(text, dest, "--report")
        print(f"wrote {dest}")
    else:
        sys.stdout.write("\n" + text)


def write_output(text: str, out: str | None, quiet: bool = False) -> None:
    """Write a rendered report to `out` (saying where on stderr), or to stdout unless `quiet`."""
    if out and out != "-":
        write_text(text, out, "--out")
        print(f"wrote {out}", file=sys.stderr)
    elif not quiet:
        sys.stdout.write(text)
