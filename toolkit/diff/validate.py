"""Check a report read from a `fxlens report --json` file before `fxlens diff` compares it.

A report JSON is user input (a baseline kept in CI, edited by hand, cut short, from another
version): a field of the wrong type would otherwise surface as a TypeError deep in the comparison
("internal error", exit 70). Each list the diff reads is checked against one row of SCHEMA, and
the first problem becomes one line naming the field: `graph_breaks[3].count: expected an integer,
got "two"`. Only the fields the diff reads are checked; more keys are welcome (rule: extend, don't break).
"""

from __future__ import annotations

from fxlens.errors import FxlensError

_STR, _INT, _NUM, _LIST, _DICT, _NONE = str, int, (int, float), list, dict, type(None)
_NAMES = {str: "a string", int: "an integer", list: "a list", dict: "an object"}

# report key -> (required, {field: allowed types}) for each item of that list; a field may be
# missing (the diff reads it with .get) unless the comparison indexes it, marked by a leading "!"
SCHEMA: dict[str, tuple[bool, dict[str, tuple]]] = {
    # compare keys graphs by (compile_id, rank) and sums nodes per function
    "graphs": (
        True,
        {
            "!compile_id": (_STR, _INT),
            "!rank": (_INT, _NONE),
            "!function": (_STR,),
            "!file": (_STR, _NONE),
            "!line": (_INT, _NONE),
            "!num_nodes": (_INT, _NONE),
            "!ops": (_LIST,),
        },
    ),
    # matched by (function, file, line, reason); counts summed
    "graph_breaks": (
        True,
        {
            "!function": (_STR,),
            "file": (_STR, _NONE),
            "line": (_INT, _NONE),
            "!reason": (_STR,),
            "!count": (_INT,),
            "source": (_STR, _NONE),
        },
    ),
    "recompiles": (False, {}),
    "recompile_causes": (
        False,
        {
            "!function": (_STR,),
            "file": (_STR, _NONE),
            "line": (_INT, _NONE),
            "!subject": (_STR,),
            "count": (_INT,),
            "message": (_STR, _NONE),
        },
    ),
    "recompile_limit_hits": (
        False,
        {"!function": (_STR,), "file": (_STR, _NONE), "line": (_INT, _NONE), "limit": (_INT, _NONE)},
    ),
    "failures": (
        False,
        {
            "!function": (_STR,),
            "file": (_STR, _NONE),
            "line": (_INT, _NONE),
            "!fail_type": (_STR, _NONE),
            "!fail_reason": (_STR, _NONE),
        },
    ),
    "kernels": (
        False,
        {
            "!compile_id": (_STR, _INT),
            "!rank": (_INT, _NONE),
            "!name": (_STR,),
            "!bytes_read": (_INT, _NONE),
            "!bytes_written": (_INT, _NONE),
        },
    ),
    "fallbacks": (False, {"!op": (_STR,), "!count": (_INT,)}),
    "guards": (False, {"!compile_id": (_STR, _INT), "!rank": (_INT, _NONE), "!guards": (_LIST,)}),
    "events": (False, {}),
    "truncated": (False, {"!log": (_STR,), "!line": (_INT,)}),  # logs cut mid-record: a failed side
}
_PER_COMPILE = {
    "!compile_id": (_STR, _INT),
    "file": (_STR, _NONE),
    "line": (_INT, _NONE),
    "!rank": (_INT, _NONE),
    "!function": (_STR, _NONE),
    "total_s": (*_NUM, _NONE),
    "guard_count": (_INT, _NONE),
}
_DOCTOR_FUNCTION = {
    "!function": (_STR,),
    "file": (_STR, _NONE),
    **{k: (*_NUM, _NONE) for k in ("eager_ms", "compiled_ms", "speedup", "compile_s")},
}


def _type_name(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    return _NAMES.get(type(value), type(value).__name__)


def _expected(types: tuple) -> str:
    names = []
    for t in types:
        if t is _NONE:
            names.append("null")
        elif t is float:
            continue  # (int, float): "a number"
        else:
            names.append("a number" if t is int and float in types else _NAMES.get(t, t.__name__))
    return " or ".join(dict.fromkeys(names))


def _ok(value, types: tuple) -> bool:
    # JSON true/false are ints to Python, but never a count or a line
    return isinstance(value, types) and not (isinstance(value, bool) and bool not in types)


def _check_items(items, where: str, fields: dict[str, tuple]) -> None:
    if not isinstance(items, list):
        raise _Bad(f"{where}: expected a list, got {_type_name(items)}")
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise _Bad(f"{where}[{i}]: expected an object, got {_type_name(item)}")
        for spec, types in fields.items():
            name = spec.lstrip("!")
            if name not in item:
                if spec.startswith("!"):
                    raise _Bad(f"{where}[{i}]: no {name!r} field")
                continue
            if not _ok(item[name], types):
                raise _Bad(f"{where}[{i}].{name}: expected {_expected(types)}, got {_type_name(item[name])}")
        for name in ("ops", "guards"):  # lists of names: a nested list would not hash
            if name in fields or "!" + name in fields:
                bad = next((x for x in item.get(name) or [] if not isinstance(x, str)), None)
                if bad is not None:
                    raise _Bad(f"{where}[{i}].{name}: expected strings, got {_type_name(bad)}")


class _Bad(Exception):
    pass


def check_report(data, path: str) -> dict:
    """DATA if it is a report the diff can read; else FxlensError, one line naming the field."""
    try:
        if not isinstance(data, dict):
            raise _Bad(f"expected a JSON object, got {_type_name(data)}")
        for key, (required, fields) in SCHEMA.items():
            if key not in data or (data[key] is None and not required):
                if required:
                    raise _Bad(f"no {key!r} list")
                continue
            _check_items(data[key], key, fields)
        ct = data.get("compile_times")
        if ct is not None:
            if not isinstance(ct, dict):
                raise _Bad(f"compile_times: expected an object, got {_type_name(ct)}")
            if not _ok(ct.get("total_s"), (*_NUM, _NONE)):
                raise _Bad(f"compile_times.total_s: expected a number, got {_type_name(ct['total_s'])}")
            _check_items(ct.get("per_compile") or [], "compile_times.per_compile", _PER_COMPILE)
        for key in ("source",):
            if data.get(key) is not None and not isinstance(data[key], dict):
                raise _Bad(f"{key}: expected an object, got {_type_name(data[key])}")
        src = data.get("source") or {}
        for key, types in (("script", (_STR, _NONE)), ("exit_code", (_INT, _NONE))):
            if not _ok(src.get(key), types):
                raise _Bad(f"source.{key}: expected {_expected(types)}, got {_type_name(src[key])}")
        for i, ev in enumerate(data.get("events") or []):
            if isinstance(ev, dict) and ev.get("event") == "doctor" and ev.get("functions"):
                _check_items(ev["functions"], f"events[{i}].functions", _DOCTOR_FUNCTION)
    except _Bad as e:
        raise FxlensError(f"{path}: not a well-formed fxlens report: {e}") from None
    return data
