"""session.json's fields, checked once where they are read (rule: sanitise once, docs/design.md): a field every reader
trusts with the wrong type (an edited file, another tool's) is a one-line FxlensError naming it,
never an "internal error" deep in markdown, html or diff."""

from __future__ import annotations

import json
from pathlib import Path

from fxlens.errors import FxlensError

_STR, _NUM, _NONE = (str,), (int, float), (type(None),)
# session.json field -> the types a reader may find there (sanitised once, here: sanitise once)
INFO_FIELDS: dict[str, tuple] = {
    "script": _STR + _NONE,
    "module": _STR + _NONE,
    "backend": _STR + _NONE,
    "command": _STR + _NONE,
    "check": _STR + _NONE,
    "cwd": _STR + _NONE,
    "fxlens_version": _STR + _NONE,
    "torch_trace": _STR + _NONE,
    "torch_trace_note": _STR + _NONE,
    "exit_code": (int,) + _NONE,
    "nproc": (int,) + _NONE,
    "interrupted": (bool,) + _NONE,
    "timed_out": _NUM + _NONE,
    "started": _NUM + _NONE,
    "finished": _NUM + _NONE,
    "seconds": _NUM + _NONE,
    "argv": (list,),
    "env": (dict,) + _NONE,
}


def _what(value) -> str:
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    return {list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


def check_info(info: dict, path: Path) -> dict:
    """INFO when each known field has a type readers expect; else FxlensError, one line naming it."""
    for name, types in INFO_FIELDS.items():
        if name not in info:
            continue
        value = info[name]
        ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in types)
        if ok and name == "argv":
            ok = all(isinstance(a, str) for a in value)
        if ok and name == "env" and value:
            ok = all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())
        if not ok:
            want = {"argv": "a list of strings", "env": "an object of strings"}.get(name) or " or ".join(
                {
                    str: "a string",
                    int: "an integer",
                    float: "a number",
                    bool: "true/false",
                    type(None): "null",
                }[t]
                for t in types
            )
            raise FxlensError(f"{path}: field {name!r}: expected {want}, got {_what(value)}")
    return info
