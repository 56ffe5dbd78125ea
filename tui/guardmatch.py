"""Guards of a compile: which guard failed on the next recompile, and the diff between two compiles.

torch logs a recompile's reasons in its own words ("0/0: tensor 'x' size mismatch at index 0",
"0/0: self._modules['drop'].training == True"), while the guard tree of 0/0 spells sources as
`L['x']`, `L['self']._modules['drop']`. Both are normalised to the user's names before matching.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

_LOCAL = re.compile(r"L\['([^']+)'\]")
_TREE_PREFIX = re.compile(r"^[|+\- ]*")
_TENSOR_REASON = re.compile(r"tensor '(?P<var>.+?)' (?P<what>\w+) mismatch")  # var: kwargs['input_ids'] too
_COMMENT = re.compile(r"\s{2,}#.*$")
_ADDRESS = re.compile(r"\b\d{9,}\b")  # object ids: differ between compiles and processes
# names Dynamo numbers per compile (`G['__builtins_dict___7']`): the same object in every compile
_NUMBERED = re.compile(r"(__builtins_dict__|__import_\w+?|___stack)_*\d+\b")


def normalise(text: str) -> str:
    """A guard or reason with `L['x']` spelled `x`, tree drawing and trailing comments removed."""
    text = _TREE_PREFIX.sub("", text)
    text = _COMMENT.sub("", text)
    return _LOCAL.sub(r"\1", text).strip()


def guard_body(line: str) -> str:
    """The guard itself without its `KIND: ` prefix (`TENSOR_MATCH: check_tensor(...)` -> `check_tensor(...)`)."""
    n = normalise(line)
    head, sep, rest = n.partition(": ")
    return rest if sep and head.replace("_", "").isalpha() and head.isupper() else n


@dataclass(frozen=True)
class FailedGuard:
    """A guard of this compile that failed later: the reason torch gave and the recompile it caused."""

    reason: str
    recompile: str  # the compile id that was compiled because this guard failed
    line_index: int | None  # index in the guard list, None when no line matches


def failed_guards(compile_id: str, recompiles, guards: list[str]) -> list[FailedGuard]:
    """The guards of `compile_id` that later recompiles name as failed, located in `guards`.

    Args:
        compile_id: the compile whose guard list is shown ("0/0").
        recompiles: `Recompile` records of the same rank.
        guards: the guard lines of `compile_id`.
    """
    out: list[FailedGuard] = []
    seen: set[str] = set()
    for r in recompiles:
        for reason in r.failed_guards:
            cid, sep, text = reason.partition(": ")
            if not sep or cid.strip() != compile_id or text in seen:
                continue
            seen.add(text)
            out.append(FailedGuard(text, r.compile_id, locate(text, guards)))
    return out


def locate(reason: str, guards: list[str]) -> int | None:
    """The index of the guard line that a recompile reason describes, or None."""
    bodies = [guard_body(g) for g in guards]
    want = normalise(reason)
    for i, b in enumerate(bodies):
        if b == want:
            return i
    for i, b in enumerate(bodies):
        if want and want in b:
            return i
    if m := _TENSOR_REASON.search(reason):
        var = m["var"]
        for i, g in enumerate(guards):
            n = normalise(g)
            if "TENSOR_MATCH" in n and (f"check_tensor({var}," in n or f"check_tensor({var} " in n):
                return i
        for i, g in enumerate(guards):
            if f"source={var}," in normalise(g):
                return i
    return None


def guard_diff(old: list[str], new: list[str]) -> list[tuple[str, str]]:
    """Guard-set diff between two compiles of a frame: (tag, guard) with tag in "-", "+", " ".

    Tree drawing, comments and object addresses are ignored, so only guards that really changed
    (a size, a dtype, a global's value) show as removed/added.
    """

    def key(g: str) -> str:
        return _NUMBERED.sub(r"\1", _ADDRESS.sub("<id>", normalise(g)))

    def keep(g: str) -> bool:
        return not g.strip().startswith("Guard latency")  # a timing, not a guard

    a, b = [key(g) for g in old if keep(g)], [key(g) for g in new if keep(g)]
    out: list[tuple[str, str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            out += [(" ", x) for x in a[i1:i2]]
        else:
            out += [("-", x) for x in a[i1:i2]]
            out += [("+", x) for x in b[j1:j2]]
    return out
