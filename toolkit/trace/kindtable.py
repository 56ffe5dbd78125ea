"""The shape of the record-kind table: one `Kind` row per record kind torch's structured trace
writes, and `KindTable`, the rows with every list the reader, the model and the TUI derive from them.

A row says everything fxlens knows about its kind: who reads it (a callable), the record type it
yields and the model field it fills, whether it may come without a compile id, the check of its
shape, whether it is bulky (slimmed once read) or skipped unread, how the TUI labels it, and whether
it holds a printed FX graph. The rows themselves are in fxlens.trace.kinds.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fxlens.trace.reader import LogScan, Record

#: the check of a record's value under its key: None when it has the shape the model relies on,
#: else a few words on why not (fxlens.trace.shapes)
Check = Callable[[Any], "str | None"]
#: a reader: `read(record, context)` -> a record for the row's field, a list of them, or None
Reader = Callable[["Record", "ReadContext"], Any]
HIDDEN = None  # a row's `label` for a kind the TUI does not list among a compile's artifacts


@dataclass(frozen=True)
class Kind:
    """One record kind: a record key ("dynamo_start"), an artifact ("artifact:<name>"), or a family
    of artifacts whose name holds `*` (one or more word characters: "artifact:fxlens_*")."""

    name: str
    read: Reader | None = None  # None: kept by compile id as it is (the TUI shows it; nothing reads it)
    record: type | str | None = None  # what `read` returns: a record type (its name: loaded late)
    field: str = ""  # the model's list it fills ("" for none)
    no_id: bool = False  # logged without a compile id, it belongs to the compile "-" (AOTInductor, export)
    check: Check | None = None  # the shape check of the record's value, run as the line is read
    slim: bool = False  # bulky metadata dropped from memory once read (`Record.slim`)
    skip: bool = False  # never decoded: skipped on its line prefix
    read_only_with: bytes = b""  # decoded only when its line holds these bytes (else skipped)
    label: str | None = ""  # the TUI's name for it ("": its own name; HIDDEN: not listed)
    graph: bool = False  # its payload is printed FX graph code (the TUI's graph view parses it)
    why: str = ""  # what it is, for the reference page
    group: str = ""  # the reference page's section
    source: str = "fxlens"  # who registered it: fxlens, or an outside package (`register_kind`)

    def __post_init__(self) -> None:
        if self.name.startswith("artifact:") and (self.check or self.skip or self.read_only_with):
            # an artifact is checked (its name) and decoded as an artifact before its name is known
            raise ValueError(f"{self.name}: an artifact row cannot have a check or be skipped unread")
        if self.field and self.read is None:
            raise ValueError(f"{self.name}: a row that fills `{self.field}` needs a reader")

    @property
    def is_family(self) -> bool:
        return "*" in self.name

    @property
    def key(self) -> str:
        """The record's key in its JSON line ("artifact" for every artifact)."""
        return self.name.split(":")[0]

    def label_of(self, kind: str) -> str | None:
        return self.label or (kind.removeprefix("artifact:") if self.label is not HIDDEN else None)


def group(name: str, rows: Iterable[Kind]) -> tuple[Kind, ...]:
    """The rows of one section of the table."""
    return tuple(replace(r, group=name) for r in rows)


def model_fields(rows: Iterable[Kind]) -> dict[str, type | str]:
    """Each model list the rows fill, with its record type, in table order."""
    out: dict[str, type | str] = {}
    for row in rows:
        if row.field and row.field not in out:
            out[row.field] = row.record or object
    return out


def _family_pattern(name: str) -> re.Pattern:
    return re.compile("^" + r"\w+".join(re.escape(p) for p in name.split("*")) + "$")


@dataclass
class ReadContext:
    """What a reader sees besides its record: the compile it belongs to, the rank's model being
    built, the log's scan (its interned file names), and `where`, the user's place of a compile."""

    model: Any  # fxlens.trace.model.RankModel
    scan: LogScan
    where: Callable[[str], tuple[str, str, int, str]]  # compile id -> (function, file, line, co_name)
    entry_stacks: dict  # compile id -> the user stack that entered it
    cid: str | None = None  # the record's compile id (its key), None when it has none
    # records held for after the pass (graphs are built once the metrics are read)
    held: dict[str, Any] = field(default_factory=dict)


class KindTable:
    """The rows, looked up by kind (exact names first, then families in table order), and the lists
    derived from them. Rows added later (an outside reader) reset the derived lists."""

    def __init__(self, rows: Iterable[Kind] = ()) -> None:
        self._exact: dict[str, Kind] = {}
        self._families: list[tuple[re.Pattern, Kind]] = []
        self._found: dict[str, Kind | None] = {}
        self.skip_prefixes: tuple[bytes, ...] = ()
        self.read_only_with: tuple[tuple[bytes, bytes], ...] = ()
        self.checks: dict[str, Check] = {}
        self.slim: frozenset[str] = frozenset()
        self.no_id: frozenset[str] = frozenset()
        for row in rows:
            self._put(row)
        self._derive()

    def _put(self, row: Kind) -> None:
        if row.name in self._exact or any(k.name == row.name for _, k in self._families):
            raise ValueError(f"record kind {row.name!r} already has a row")
        if row.is_family:
            self._families.append((_family_pattern(row.name), row))
        else:
            self._exact[row.name] = row

    def _derive(self) -> None:
        rows = list(self)
        self._found = {}
        self.skip_prefixes = tuple(b'{"' + r.key.encode() + b'"' for r in rows if r.skip)
        self.read_only_with = tuple(
            (b'{"' + r.key.encode() + b'"', r.read_only_with) for r in rows if r.read_only_with
        )
        self.checks = {r.key: r.check for r in rows if r.check}
        self.slim = frozenset(r.name for r in rows if r.slim)
        self.no_id = frozenset(r.name for r in rows if r.no_id)

    def add(self, row: Kind) -> None:
        self._put(row)
        self._derive()

    def __iter__(self) -> Iterator[Kind]:
        yield from self._exact.values()
        yield from (row for _, row in self._families)

    def get(self, kind: str) -> Kind | None:
        """The row of a record kind, or None when no row knows it."""
        if kind in self._exact:
            return self._exact[kind]
        if kind not in self._found:
            self._found[kind] = next((row for p, row in self._families if p.match(kind)), None)
        return self._found[kind]

    def label(self, kind: str) -> str | None:
        """The TUI's label of a record kind (None: not listed); unknown kinds show their own name."""
        row = self.get(kind)
        return row.label_of(kind) if row else kind.removeprefix("artifact:")

    def is_graph(self, kind: str) -> bool:
        row = self.get(kind)
        return bool(row and row.graph)
