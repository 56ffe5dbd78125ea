"""Which cache entry a recompiling call came nearest to: the entry whose other guards pass.

torch lists one failed guard per cache entry, the first that entry's checks reached. Every listed
failure also says something about the call itself: `tensor 'x' size mismatch at index 0. expected
4, actual 6` says x's dim 0 is 6 now (and that x's dtype, requires_grad and rank are that entry's,
checked before its sizes); a failure after the global-state check says the call's grad mode,
autocast and the rest are that entry's; `GLOBAL_STATE changed: grad_mode` says the grad mode is
not that entry's; any other failed expression fails in every entry that guards the same one.
Checked against each entry's own guard tree, those facts count how many guards each entry fails;
the entry with the fewest is the one the call came nearest to, and its failure is the cause.

Two entries may tie (a call that differs from one entry in its grad mode and from another in a
size): then the caller's own order decides. Without guard trees every entry counts one failure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fxlens.trace.guards import FailedGuard
from fxlens.trace.guardtree import EntryState, local_name

# the tensor checks of one TENSOR_MATCH, in the order torch's check_tensor makes them
_TENSOR_ORDER = ("dtype", "requires_grad", "ndim", "size", "stride")
_GLOBAL_PREFIX = "GLOBAL_STATE changed:"
# failures that are no guard of the call (a dropped entry; every guard passed but the backend)
_NOT_A_CHECK = ("cache_note",)


@dataclass(frozen=True)
class Fact:
    """One thing a failure says about the call: `fails(state)` is True when that entry's tree fails
    it, False when it passes, None when the tree does not say."""

    key: tuple
    fails: Callable[[EntryState], bool | None]


def _global_key(field: str, state: dict) -> str | None:
    """torch's field name in the failure text (`autocast(cpu)_enabled`) -> its key in the tree's JSON."""
    if field in state:
        return field
    head = field.split("(")[0]
    return next((k for k in state if k.startswith(head)), None)


def _global_facts(g: FailedGuard, mine: EntryState | None) -> list[Fact]:
    if mine is None or not mine.global_state:
        return []
    facts = []
    if g.text.startswith(_GLOBAL_PREFIX):  # these fields differ from this entry's
        for field in g.text[len(_GLOBAL_PREFIX) :].split():
            key = _global_key(field, mine.global_state)
            if key is not None:
                v = mine.global_state[key]
                facts.append(Fact(("global", key), lambda s, k=key, v=v: _get_global(s, k, v, same=True)))
        return facts
    for key, v in mine.global_state.items():  # checked before this failure, so the call's are these
        facts.append(Fact(("global", key), lambda s, k=key, v=v: _get_global(s, k, v, same=False)))
    return facts


def _get_global(s: EntryState, key: str, v, same: bool) -> bool | None:
    if not s.global_state or key not in s.global_state:
        return None
    return (s.global_state[key] == v) if same else (s.global_state[key] != v)


def _tensor_value(s: EntryState, src: str, prop: tuple):
    t = s.tensors.get(src)
    if t is None:
        return None
    if prop[0] == "size":
        return t.sizes[prop[1]] if prop[1] < len(t.sizes) else None
    if prop[0] == "stride":
        return t.strides[prop[1]] if prop[1] < len(t.strides) else None
    return {"dtype": t.dtype, "requires_grad": t.requires_grad, "ndim": len(t.sizes)}[prop[0]]


def _tensor_fact(src: str, prop: tuple, value) -> Fact:
    def fails(s: EntryState) -> bool | None:
        have = _tensor_value(s, src, prop)
        return None if have is None else have != value

    return Fact(("tensor", src, *prop), fails)


def _tensor_facts(g: FailedGuard, mine: EntryState | None) -> list[Fact]:
    src = local_name(g.source)
    dim = int(g.dim) if g.dim.isdigit() else 0
    own = {
        "size": lambda: (("size", dim), int(g.actual)),
        "stride": lambda: (("stride", dim), int(g.actual)),
        "ndim": lambda: (("ndim",), int(g.actual)),
        "dtype": lambda: (("dtype",), g.actual),
        "requires_grad": lambda: (("requires_grad",), g.actual == "True"),
    }
    facts = []
    try:
        prop, value = own[g.kind]()
        facts.append(_tensor_fact(src, prop, value))
    except ValueError:  # a symbolic value torch printed: nothing certain
        pass
    t = mine.tensors.get(src) if mine is not None else None
    if t is not None:  # what check_tensor compared before this mismatch held
        order = _TENSOR_ORDER.index(g.kind)
        earlier = [(p,) for p in _TENSOR_ORDER[: min(order, 3)]]
        if g.kind in ("size", "stride"):
            n = dim if g.kind == "size" else len(t.sizes)
            earlier += [("size", i) for i in range(n)]
        if g.kind == "stride":
            earlier += [("stride", i) for i in range(dim)]
        for p in earlier:
            v = _tensor_value(mine, src, p)
            if v is not None:
                facts.append(_tensor_fact(src, p, v))
    return facts


def facts_of(g: FailedGuard, mine: EntryState | None) -> list[Fact]:
    """What one entry's failed guard says about the call."""
    if g.kind in _NOT_A_CHECK or g.text.startswith(("BACKEND_MATCH", "Unexpected recompilation")):
        return []
    facts = _global_facts(g, mine)
    if g.kind in _TENSOR_ORDER:
        facts += _tensor_facts(g, mine)
    elif not g.text.startswith(_GLOBAL_PREFIX):
        expr = local_name(g.text)
        facts.append(Fact(("expr", expr), lambda s, e=expr: e in s.expressions))
    return facts


def _entry_key(against: str, compile_id: str) -> str:
    """The compile key of the entry a failure names ("0/1"), after a reset too ("0/1#2")."""
    _, sep, occ = compile_id.partition("#")
    return f"{against}#{occ}" if sep and against and "#" not in against else against


def failure_counts(
    guards: list[FailedGuard], compile_id: str, states: Callable[[str], EntryState | None] | None
) -> list[int]:
    """For each listed failure (one per cache entry), how many guards its entry fails, as far as the
    other entries' failures and the entries' guard trees tell."""
    entry_states = [states(_entry_key(g.against, compile_id)) if states else None for g in guards]
    all_facts = [facts_of(g, s) for g, s in zip(guards, entry_states, strict=True)]
    counts = []
    for i, s in enumerate(entry_states):
        own = {f.key for f in all_facts[i]}
        failed = set()
        if s is not None:
            for j, facts in enumerate(all_facts):
                failed |= {f.key for f in facts if j != i and f.key not in own and f.fails(s)}
        counts.append(1 + len(failed))
    return counts


def nearest(
    guards: list[FailedGuard], compile_id: str, states: Callable[[str], EntryState | None] | None
) -> list[int]:
    """Indexes of the failures whose entries fail the fewest guards (the nearest entries), in order."""
    checks = [i for i, g in enumerate(guards) if g.kind not in _NOT_A_CHECK] or list(range(len(guards)))
    counts = failure_counts(guards, compile_id, states)
    best = min((counts[i] for i in checks), default=0)
    return [i for i in checks if counts[i] == best]
