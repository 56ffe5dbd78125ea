"""What one cache entry guards on, read from its guard tree (`dynamo_cpp_guards_str`).

A recompile record lists one failed guard per cache entry: torch stops at the first guard an entry
fails. To tell which entry the call came nearest to (the one whose other guards pass), fxlens needs
the values every entry was compiled for; the guard tree has them:

    | +- GLOBAL_STATE: ___check_global_state() against {"grad_mode":true, ...}
    | | +- TENSOR_MATCH: check_tensor(L['x'], Tensor, DispatchKeySet(...), torch.float32,
    |        device=None, requires_grad=False, size=[4, None], stride=[1, None])  # x * 2  # m.py:4 in f
    | | +- EQUALS_MATCH: L['k'] == 2      # return x * k  # m.py:8 in f

Sources are written as the failed-guard lines write them (`L['x']` -> `x`, `L['kw']['labels']` ->
`kw['labels']`), so a fact read from one entry's failure is checked against another entry's tree.
Pure Python, like the rest of fxlens.trace.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field

_LOCAL = re.compile(r"\bL\['([^']+)'\]")
_LEAF = re.compile(r"^[|\s]*\+- (?P<kind>[A-Z_]+): (?P<body>.*)$")
_TENSOR = re.compile(
    r"^check_tensor\((?P<src>.+?), \w+, DispatchKeySet\([^)]*\), torch\.(?P<dtype>\w+), "
    r"device=(?P<device>[^,]+), requires_grad=(?P<rg>True|False), "
    r"size=\[(?P<size>[^\]]*)\], stride=\[(?P<stride>[^\]]*)\]\)"
)
_GLOBAL = re.compile(r"___check_global_state\(\) against (?P<json>\{.*\})")


def local_name(text: str) -> str:
    """A guard expression or source as a failed-guard line writes it: `L['x']` -> `x`."""
    return _LOCAL.sub(r"\1", text.strip())


@dataclass(frozen=True)
class TensorState:
    """What TENSOR_MATCH checks of one tensor: dtype, requires_grad, sizes and strides (None: dynamic)."""

    dtype: str
    requires_grad: bool
    sizes: tuple[int | None, ...]
    strides: tuple[int | None, ...]


@dataclass
class EntryState:
    """One cache entry's guarded values: global state, tensors, and every other guard's expression."""

    global_state: dict = field(default_factory=dict)
    tensors: dict[str, TensorState] = field(default_factory=dict)
    expressions: set[str] = field(default_factory=set)


def _dims(text: str) -> tuple[int | None, ...]:
    return tuple(None if p.strip() == "None" else int(p) for p in text.split(",") if p.strip())


def parse_guard_tree(text: str) -> EntryState:
    """The guarded values of one `dynamo_cpp_guards_str` payload (lines it cannot read are skipped)."""
    state = EntryState()
    for line in text.split("\n"):
        m = _LEAF.match(line)
        if not m:
            continue
        expr = re.split(r"\s+# ", m["body"], maxsplit=1)[0].strip()
        if m["kind"] == "GLOBAL_STATE":
            g = _GLOBAL.search(expr)
            try:
                state.global_state = json.loads(g["json"]) if g else {}
            except ValueError:
                state.global_state = {}
        elif m["kind"] == "TENSOR_MATCH":
            t = _TENSOR.match(expr)
            if t:
                try:
                    state.tensors[local_name(t["src"])] = TensorState(
                        t["dtype"], t["rg"] == "True", _dims(t["size"]), _dims(t["stride"])
                    )
                except ValueError:  # a symbolic size printed some other way: not read
                    pass
        else:
            state.expressions.add(local_name(expr))
    return state


def entry_states(by_compile: dict) -> Callable[[str], EntryState | None]:
    """`state(compile_id)`: the guarded values of one compile of a rank's records (None without a
    guard tree), each tree read from disk and parsed once, when first asked."""
    cache: dict[str, EntryState | None] = {}

    def state(key: str) -> EntryState | None:
        if key not in cache:
            rec = next((r for r in by_compile.get(key, ()) if r.kind == "dynamo_cpp_guards_str"), None)
            cache[key] = parse_guard_tree(rec.payload()) if rec is not None else None
        return cache[key]

    return state
