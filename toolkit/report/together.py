"""Inputs that change size together (a graph's node features and its edge index, observations and
actions): torch lists only the first guard that failed, so a recompile names one of them, but at
that recompile torch's automatic dynamic shapes makes every input dim that changed dynamic, and
its structured trace names each one (`create_symbol`, source `L['edges'].size()[1]`). Marking the
named input alone leaves the recompile on the next one; the fix marks each."""

from __future__ import annotations

import re
from dataclasses import replace

from fxlens.report.fixes import action
from fxlens.trace.records import RecompileCause

# a dim of an argument of the compiled frame, as torch names the symbol's source: `L['x']`,
# `L['kwargs']['input_ids']` (a wrapper's **kwargs), `L['args'][0]` (a module call's *args)
_SOURCE = re.compile(r"^L\['(\w+)'\](?:\['(\w+)'\]|\[(\d+)\])?\.size\(\)\[(\d+)\]$")


def _arg(source: str) -> tuple[str, int] | None:
    m = _SOURCE.match(source)
    if not m:
        return None
    top, key, index, dim = m.groups()
    if key and top == "kwargs":
        return key, int(dim)
    if index is not None and top == "args":
        return f"args[{index}]", int(dim)
    return (top, int(dim)) if not key and index is None else None


def dims_made_dynamic(records_of, compile_ids, named: tuple[str, int] | None = None) -> list[tuple[str, int]]:
    """(argument, dim) of each input dim torch made dynamic in the compiles COMPILE_IDS, in order;
    NAMED: only from the compiles that made that one dynamic (the frame whose guard named it, not a
    frame resumed after a graph break, whose arguments are the frame's own locals)."""
    out: list[tuple[str, int]] = []
    for cid in compile_ids:
        dims = [
            got
            for rec in records_of(cid)
            if rec.kind == "create_symbol"
            and (got := _arg(str((rec.full_meta().get("create_symbol") or {}).get("source") or "")))
        ]
        if named is None or named in dims:
            out += [d for i, d in enumerate(dims) if d not in out and d not in dims[:i]]
    return out


def marks_together(cause: RecompileCause, records_of) -> RecompileCause:
    """CAUSE with its one `mark_dynamic` replaced by a mark of every input dim torch made dynamic at
    its recompiles, when that is more than the one its guard names (unchanged otherwise)."""
    marks = [a for a in cause.actions if a["kind"] == "mark_dynamic"]
    if len(marks) != 1:
        return cause
    mark = marks[0]["params"]
    named = (mark["arg"], int(mark["dim"]))
    dims = dims_made_dynamic(records_of, cause.compile_ids, named)
    if len(dims) < 2:
        return cause
    dims = [named] + [d for d in dims if d != named]
    words = ", ".join(f"`{a}` dim {d}" for a, d in dims)
    frame = {k: mark[k] for k in ("function", "file", "owner") if k in mark}
    together = action(
        "mark_dynamic_together", args=[a for a, _ in dims], dims=[d for _, d in dims], marks=words, **frame
    )
    calls = " and ".join(f"`torch._dynamo.mark_dynamic({a}, {d})`" for a, d in dims)
    fix = (
        f"these inputs change size together ({words}: torch made each of them dynamic when it "
        f"recompiled, and its guard names only the first): mark each before the call ({calls}); "
        "marking one alone leaves the recompile on the next"
    )
    actions = tuple(together if a is marks[0] else a for a in cause.actions)
    return replace(cause, fix=fix, actions=actions)
