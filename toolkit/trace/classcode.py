"""Compiled once: the methods `dataclasses` writes for fxlens's records, kept beside the bytecode.

`@dataclass` writes each class's `__init__`, `__repr__`, `__eq__` (and, frozen, `__hash__`,
`__setattr__`, `__delattr__`) as source text and compiles it with `exec` at import, every process:
Python's bytecode cache does not hold them. For `fxlens report` that compile was the largest single
part of its start (~25 ms of CPU for ~50 classes, ~0.5 ms each). While `cached()` is active, the
text `dataclasses` hands to `exec` is looked up in a table of code objects compiled earlier (keyed
by the text itself, so a changed class simply misses and is compiled as before), and the table is
saved where the package's bytecode lives when something was new. The code executed is what
`exec(text)` would have compiled; only the compile is skipped. Bytecode writing off
(PYTHONDONTWRITEBYTECODE, `-B`) writes nothing, as for `.pyc` files; an unwritable folder is skipped.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import marshal
import os
import sys
from collections.abc import Iterator

_MAX = 2000  # entries kept: past this (many edits of the classes) only the last run's are saved


def _path(name: str) -> str:
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.path.join(here, "__pycache__", f"dataclass-code.{name}.{sys.implementation.cache_tag}.marshal")


def _load(path: str) -> dict:
    try:
        with open(path, "rb") as f:
            table = marshal.loads(f.read())  # one read: marshal.load(f) reads a file object piece by piece
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    return table if isinstance(table, dict) else {}


def _save(path: str, table: dict) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with contextlib.suppress(OSError):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "wb") as f:
            marshal.dump(table, f)
        os.replace(tmp, path)  # whole or not at all: a concurrent reader sees the old table or this one
    with contextlib.suppress(OSError):
        os.unlink(tmp)


@contextlib.contextmanager
def cached(name: str) -> Iterator[None]:
    """Dataclasses created inside reuse (and add to) the compiled table NAME (one per command: what
    one command imports is what it loads). Not re-entrant; main thread."""
    if getattr(dataclasses, "exec", None) is not None or sys.implementation.name != "cpython":
        yield  # already active, or a dataclasses that names its own exec: leave it alone
        return
    path = _path(name)
    table = _load(path)
    used: set[str] = set()
    new = 0

    def exec_cached(text, globs=None, locs=None, /):
        nonlocal new
        if not isinstance(text, str):
            return builtins.exec(text, globs, locs)
        used.add(text)
        code = table.get(text)
        if code is None:
            code = table[text] = compile(text, "<string>", "exec")
            new += 1
        return builtins.exec(code, globs, locs)

    dataclasses.exec = exec_cached  # the name `dataclasses` calls; module globals shadow builtins
    try:
        yield
    finally:
        del dataclasses.exec
        if new and not sys.dont_write_bytecode:
            _save(path, table if len(table) <= _MAX else {t: table[t] for t in used})
