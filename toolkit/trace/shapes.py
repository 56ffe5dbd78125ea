"""The shape of each trace record the model reads, checked once, where the record is read.

A trace may come from another machine, another torch version or someone hostile. The reader
decodes a line, then asks `problem(kind, meta)`: None when the record has the shape the model
relies on, else a few words on why not. A record that fails is skipped and counted (with its line
number and that reason); it never costs the rest of its rank's log. The model can then index
these records without re-checking types.
"""

from __future__ import annotations

from collections.abc import Callable

_INT = (int,)  # bool is an int too; torch never writes one where an int is meant, harmless either way


def _is_int(v) -> bool:
    return isinstance(v, int)


def _opt(types: tuple) -> Callable[[object], bool]:
    return lambda v: v is None or isinstance(v, types)


def _text_ok(v) -> bool:
    """A name the model uses as a path or identifier: a string without NUL (open() rejects NUL)."""
    return isinstance(v, str) and "\x00" not in v


# compile-id and rank fields every record may carry
_META_FIELDS: dict[str, Callable[[object], bool]] = {
    "frame_id": _opt(_INT),
    "frame_compile_id": _opt(_INT),
    "attempt": _opt(_INT),
    "rank": _opt(_INT),
}

# compilation_metrics fields the model reads, and what each must be (absent is fine)
_METRIC_FIELDS: dict[str, Callable[[object], bool]] = {
    "compile_id": _opt((str,)),
    "co_name": lambda v: v is None or _text_ok(v),
    "co_filename": lambda v: v is None or _text_ok(v),
    "co_firstlineno": _opt(_INT),
    "graph_node_count": _opt(_INT),
    "guard_count": _opt(_INT),
    "entire_frame_compile_time_s": _opt((int, float)),
    "backend_compile_time_s": _opt((int, float)),
    "fail_type": _opt((str,)),
    "fail_reason": _opt((str,)),
    "inductor_compile_time_s": _opt((int, float)),
    "code_gen_time_s": _opt((int, float)),
    "dynamo_time_before_restart_s": _opt((int, float)),
    "restart_reasons": lambda v: v is None or (isinstance(v, list) and all(isinstance(x, str) for x in v)),
    "fail_user_frame_filename": lambda v: v is None or _text_ok(v),
    "fail_user_frame_lineno": _opt(_INT),
    **{
        f"{c}_cache_{w}_count": _opt(_INT)
        for c in ("inductor_fx_local", "inductor_fx_remote", "aotautograd_local", "aotautograd_remote")
        for w in ("hit", "miss")
    },
}


def check_str(v) -> str | None:
    if not (isinstance(v, list) and len(v) == 2 and _is_int(v[1]) and isinstance(v[0], str)):
        return "string table entry is not [name, index]"
    if "\x00" in v[0]:
        return "file name holds a NUL byte"
    return None


def check_dynamo_start(v) -> str | None:
    if not isinstance(v, dict) or not isinstance(v.get("stack", []), list):
        return "stack is not a list"
    for f in v.get("stack", []):
        if not isinstance(f, dict):
            return "stack frame is not an object"
        if not _opt(_INT)(f.get("line")) or not (f.get("name") is None or _text_ok(f.get("name"))):
            return "stack frame has a bad line or name"
        fn = f.get("filename")
        if not (fn is None or _is_int(fn) or _text_ok(fn)):
            return "stack frame has a bad file name"
        if not _opt((str,))(f.get("loc")):
            return "stack frame has a bad source line"
    return None


def check_metrics(v) -> str | None:
    if not isinstance(v, dict):
        return "compilation_metrics is not an object"
    for key, ok in _METRIC_FIELDS.items():
        value = v.get(key)
        if isinstance(value, str) and "\x00" in value:
            return f"compilation_metrics.{key} holds a NUL byte"
        if not ok(value):
            return f"compilation_metrics.{key} has the wrong type ({type(value).__name__})"
    return None


def check_output_graph(v) -> str | None:
    if v is not None and not (isinstance(v, dict) and isinstance(v.get("sizes", {}), dict)):
        return "dynamo_output_graph.sizes is not an object"
    return None


def _artifact(v) -> str | None:
    if not (isinstance(v, dict) and isinstance(v.get("name"), str)):
        return "artifact has no name"
    return None


def problem(kind: str, meta: dict, check: Callable[[object], str | None] | None = None) -> str | None:
    """Why the record `meta` (whose key is `kind`) cannot be used, or None when it can: its compile
    id and rank fields, an artifact's name, and `check`, its kind's own (fxlens.trace.kinds)."""
    for key, ok in _META_FIELDS.items():
        if not ok(meta.get(key)):
            return f"{key} is not an integer"
    if kind == "artifact":
        check = _artifact
    return check(meta[kind]) if check else None


def skipped_note(name: str, bad: list[tuple[int, str]], shown: int = 5) -> str:
    """`tiny.log: 2 unreadable records skipped: line 4, not JSON; line 9, stack is not a list`."""
    bad = sorted(bad)
    n = len(bad)
    what = "1 unreadable record" if n == 1 else f"{n} unreadable records"
    detail = "; ".join(f"line {line}, {why}" for line, why in bad[:shown])
    return f"{name}: {what} skipped: {detail}" + (f"; ... {n - shown} more" if n > shown else "")
