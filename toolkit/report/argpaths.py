"""Which tensors of a recompile the user holds: the compiled call's own arguments (and paths into
them), in the frames the user's call entered, also where torch resumed one after a graph break."""

from __future__ import annotations

import re

from fxlens.report.causefix import RESUME_PREFIX
from fxlens.trace.guards import FailedGuard, source_name
from fxlens.trace.userframes import def_params

# a path into an argument: `labels[0]['boxes']`, `batch.pixel_values`, `args[0]` (its root is the name)
_ARG_PATH = re.compile(r"^(?P<root>[A-Za-z_]\w*)(?:\[[^\]]+\]|\.\w+)*$")


def held(guard: FailedGuard, g: dict, entry_ids: set | None, entry_frames: set | None = None) -> bool:
    """Whether the guarded tensor is one the user passes to the compiled call: a path into an argument
    (`x`, `args[0]`, `labels[0]['boxes']`; not `self.`, not a value torch kept across a break) of a
    frame the user's compiled call entered. A frame resumed after a graph break holds the original
    function's locals: a path into one of its parameters is still the user's argument there, when
    that function is the one the user's call entered (`entry_frames`); any other local is not."""
    name = source_name(guard.source) if guard.source else ""
    m = _ARG_PATH.match(name)
    if not m or m["root"] in ("self", "G") or name.startswith("___"):
        return False
    if any(c.startswith(RESUME_PREFIX) for c in g["co_names"]) and len(g["co_names"]) == 1:
        rc = g["rc"]
        entered = entry_frames is None or (rc.function, rc.file) in entry_frames
        return entered and m["root"] in def_params(rc.file, rc.line)
    return entry_ids is None or any(i in entry_ids for i in g["ids"])


def entry_frames(stacks: dict) -> set | None:
    """(function, file) of each frame the user's compiled call entered (see `entry_ids`)."""
    ids = entry_ids(stacks)
    if ids is None:
        return None
    return {(stacks[c][-1].function, stacks[c][-1].file) for c in ids if stacks.get(c)}


def entry_ids(stacks: dict) -> set | None:
    """The compile ids whose frame the user's compiled call entered: in its stack, nothing but
    torch's own call plumbing between torch's compile wrapper and the frame (an inner frame compiled
    after a graph break has the outer frame's code in between). None when no stack was logged."""
    if not stacks:
        return None
    out = set()
    for cid, stack in stacks.items():
        at = max((i for i, f in enumerate(stack) if f.function == "compile_wrapper"), default=None)
        if at is None:
            out.add(cid)  # no wrapper frame logged: nothing says the frame is an inner one
        elif all("/torch/" in f.file.replace("\\", "/") for f in stack[at + 1 : -1]):
            out.add(cid)
    return out
