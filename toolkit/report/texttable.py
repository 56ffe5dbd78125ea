"""Plain-text tables: `tabulate(rows, headers, tablefmt="simple")`, the one format fxlens prints.

The same text as the `tabulate` package's "simple" format (tests/report/test_table.py compares the
two on many tables), without its import: `import tabulate` asks importlib.metadata for its own
version, which scans every installed distribution: 36 ms of a quiet `fxlens report`'s 105 ms.

Rules kept: a column whose every non-empty cell reads as a number is numeric (right-aligned, floats
on their decimal point, written with format "g"), else left-aligned text; None is an empty cell;
each column is at least its header plus 2 wide; columns are joined by two spaces, lines stripped
on the right; the header is underlined with dashes.
"""

from __future__ import annotations

import re

_MIN_PADDING = 2
_INVISIBLE = re.compile(r"\x1b\[\d*m|\x1b\[\d*;\d*;\d*m|\x1b\]8;;.*?\x1b\\")


def _is_int(v) -> bool:
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return True
    if not isinstance(v, str):
        return False
    try:
        int(v)
    except ValueError:
        return False
    return True


def _is_number(v) -> bool:
    if isinstance(v, bool):
        return False
    if isinstance(v, (int, float)):
        return True
    if not isinstance(v, str):
        return False
    try:
        x = float(v)
    except ValueError:
        return False
    # "infinity" reads as a float but tabulate counts only these spellings of inf and nan
    return x == x and abs(x) != float("inf") or v.lower() in ("inf", "-inf", "nan")


# a column takes the most generic kind of its cells (tabulate's order)
_RANK = {"none": 0, "bool": 1, "int": 2, "float": 3, "str": 5}


def _kind(v) -> str:
    if v is None or v == "":
        return "none"
    if isinstance(v, bool) or v in ("True", "False"):
        return "bool"
    if _is_int(v):
        return "int"
    return "float" if _is_number(v) else "str"


def _column_kind(values: list) -> str:
    """ "int", "float", "bool" or "str", as tabulate infers it (empty cells do not count)."""
    kind = max((_kind(v) for v in values), key=_RANK.__getitem__, default="none")
    return "str" if kind == "none" else kind


def _text(v, kind: str) -> str:
    if v is None:
        return ""
    if kind == "float" and _is_number(v):
        return format(float(v), "g")
    if kind in ("str", "bool"):  # text is stripped before it is aligned; numbers keep their spaces
        return str(v).strip()
    return str(v)


def _width(s: str) -> int:
    s = _INVISIBLE.sub("", s)
    if s.isascii():
        return len(s)
    try:  # wide (CJK) characters take two columns, as tabulate counts them when wcwidth is there
        import wcwidth

        return wcwidth.wcswidth(s)
    except ImportError:
        return len(s)


def _after_point(s: str) -> int:
    """Digits after the decimal point (-1: none), as tabulate aligns floats."""
    if not _is_number(s) or _is_int(s):
        return -1
    pos = s.rfind(".")
    if pos < 0:
        pos = s.lower().rfind("e")
    return len(s) - pos - 1 if pos >= 0 else -1


def _on_point(strings: list[str]) -> list[str]:
    """Numbers padded on the right so that their decimal points line up."""
    dec = [_after_point(s) for s in strings]
    most = max(dec, default=0)
    return [s + " " * (most - d) for s, d in zip(strings, dec, strict=True)]


def _pad(strings: list[str], kind: str, width: int) -> list[str]:
    if kind in ("int", "float"):
        return [" " * (width - _width(s)) + s for s in strings]
    return [s + " " * (width - _width(s)) for s in strings]


def tabulate(rows, headers=(), tablefmt: str = "simple", disable_numparse: bool = False) -> str:
    """`rows` (lists of cells) under `headers`, in tabulate's "simple" format; DISABLE_NUMPARSE:
    every column is text (left-aligned, as written), as tabulate's switch of that name."""
    if tablefmt != "simple":
        raise ValueError(f"only the simple format is supported, not {tablefmt!r}")
    rows = [list(r) for r in rows]
    headers = [str(h) for h in headers]
    ncols = max([len(headers)] + [len(r) for r in rows]) if rows or headers else 0
    rows = [r + [None] * (ncols - len(r)) for r in rows]
    # headers name the last columns when there are fewer of them (as tabulate does)
    headers = [""] * (ncols - len(headers)) + headers if headers else []
    columns = []
    for i in range(ncols):
        kind = "str" if disable_numparse else _column_kind([r[i] for r in rows])
        cells = [_text(r[i], kind) for r in rows]
        if kind in ("int", "float"):  # aligned on the point first: that can widen the column
            cells = _on_point(cells)
        least = _width(headers[i]) + _MIN_PADDING if headers else 0
        width = max([least] + [_width(c) for c in cells])
        columns.append((kind, _pad(cells, kind, width), width))
    lines = []
    if headers:
        head = [
            (" " * (w - _width(h)) + h) if kind in ("int", "float") else (h + " " * (w - _width(h)))
            for h, (kind, _, w) in zip(headers, columns, strict=True)
        ]
        lines.append("  ".join(head).rstrip())
        lines.append("  ".join("-" * w for _, _, w in columns).rstrip())
    for k in range(len(rows)):
        lines.append("  ".join(col[k] for _, col, _ in columns).rstrip())
    return "\n".join(lines)
