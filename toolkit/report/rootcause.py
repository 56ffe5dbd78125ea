"""Root-cause recompiles: a storm across a function and its resume functions becomes one cause each.

Each recompile lists, newest first, why every earlier compile of the frame failed its guards. The
cause of a recompile is the failure kind that is new at that recompile (the others were already
explained by earlier ones); every failure still contributes the values it shows, so a batch-size
storm reads "input `x`, dim 0 took values 8, 5, 3".
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from fxlens.report.argpaths import entry_frames, entry_ids, held
from fxlens.report.causefix import (
    CAUSES,
    RESUME_PREFIX,
    cause_fix,
    format_for_guard,
    shorten,
)
from fxlens.report.gradmode import grad_mode_in_library
from fxlens.report.nearest import nearest
from fxlens.report.together import marks_together
from fxlens.trace.guards import FailedGuard, describe_source, parse_failed_guard
from fxlens.trace.guardtree import entry_states
from fxlens.trace.records import Recompile, RecompileCause, RecompileLimitHit
from fxlens.trace.userframes import short_path


def classify(guard: str) -> tuple[str, str, str, str, str]:
    """(kind, source, dim, expected, actual) of one failed-guard line (with or without "0/1: ")."""
    g = parse_failed_guard(guard)
    return g.kind, g.source, g.dim, g.expected, g.actual


def _guards_of(rc: Recompile) -> list[FailedGuard]:
    return list(rc.guards) if rc.guards else [parse_failed_guard(t) for t in rc.failed_guards]


def _values(g: FailedGuard) -> list[str]:
    return [v for v in (g.expected, g.actual) if v and g.kind not in _STATE_KINDS]


# kinds whose record carries no values (torch names only what changed)
_STATE_KINDS = {
    "grad_mode",
    "autocast",
    "default_dtype",
    "deterministic",
    "num_threads",
    "matmul_precision",
    "torch_function_mode",
    "global_state",
    "cache_note",
    "size_branch",
    "shape_relation",
    "identity",
    "type",
    "instance_attr",
    "default_device",
    "saved_tensors_hooks",
    "dict_version",
    "hooks",
    "dict_key",
    "hasattr",
    "dict_keys",
    "aliasing",
    "other",
}

# kinds whose values identify the change itself, so the same values under two names are one cause
_MERGEABLE = {"size", "stride", "ndim", "dtype", "requires_grad", "device"}


def _identity(g: FailedGuard) -> tuple:
    """What makes two failed guards the same change: kind, source and dim (torch's text for the
    kinds that name no source, so two different unknown guards stay two causes)."""
    return (
        (g.kind, g.source, g.dim) if g.source or g.kind in _STATE_KINDS - {"other"} else (g.kind, g.text, "")
    )


def _group_by_guard(recompiles: Iterable[Recompile], states=None) -> dict[tuple, dict]:
    """Failed guards grouped per (function, file, kind, source, dim); each recompile counted once,
    under the failure of the cache entry the call came nearest to (fxlens.report.nearest); where
    entries tie, the first of theirs not seen before in its function (the change that caused it)."""
    groups: dict[tuple, dict] = {}
    seen_kinds: dict[tuple, set] = {}
    for rc in recompiles:
        fkey = (rc.function, rc.file)
        seen = seen_kinds.setdefault(fkey, set())
        # torch's cache note is blamed only when it is all the recompile says (one recompile
        # of a type-id storm blamed on "Cache line invalidated")
        parsed = [p for p in _guards_of(rc) if p.kind != "cache_note"] or _guards_of(rc)
        near = [parsed[i] for i in nearest(parsed, rc.compile_id, states)] if parsed else []
        cause = next((p for p in near if _identity(p) not in seen), near[0] if near else None)
        counted = False
        for g in parsed:
            key = (*fkey, *_identity(g))
            grp = groups.setdefault(
                key, {"rc": rc, "guard": g, "values": [], "count": 0, "ids": [], "co_names": set()}
            )
            grp["co_names"].add(rc.co_name or rc.function)
            # the first (newest) failure carries the value this call had; older entries repeat history
            for v in _values(g):
                if v not in grp["values"]:
                    grp["values"].append(v)
            if cause is not None and _identity(g) == _identity(cause) and not counted:
                counted = True
                grp["count"] += 1
                grp["ids"].append(rc.compile_id)
            seen.add(_identity(g))
    return groups


def _merge_across_names(groups: dict[tuple, dict]) -> dict[tuple, dict]:
    """A storm across a function and its resume functions: the same change seen under another name
    (x in forward, y after the break) with the same values is one cause."""
    merged: dict[tuple, dict] = {}
    for (function, file, kind, var, dim), g in groups.items():
        if g["count"] == 0:
            continue
        mkey = (
            (function, file, kind, dim, tuple(g["values"]))
            if kind in _MERGEABLE
            else (function, file, kind, var, dim)
        )
        m = merged.get(mkey)
        if m is None:
            merged[mkey] = {**g, "guards": [g["guard"]]}
        else:
            m["count"] += g["count"]
            m["ids"] += g["ids"]
            m["guards"].append(g["guard"])
            m["co_names"] = m["co_names"] | g["co_names"]
    return merged


def _cause(
    function: str, file: str, g: dict, hit_limit: bool, entry_ids: set | None = None, frames=None
) -> RecompileCause:
    """One merged group as a cause: what changed, in words, torch's own guard, and the fix."""
    guard: FailedGuard = g["guards"][0]
    kind = guard.kind
    if kind == "size" and "1" in g["values"]:
        kind = "size_one"  # a dim that became (or was) 1: torch specialises that size, always
    subject_t, fix_t = CAUSES.get(kind, CAUSES["other"])
    subject = format_for_guard(subject_t, guard)
    vals = ", ".join(g["values"])
    if kind in _STATE_KINDS:
        message = f"{subject} changed"
    elif kind == "dtype":
        message = f"{subject} took {vals}"
    elif len(g["values"]) == 1:
        message = f"{subject} was specialised to {vals}, then changed"
    else:
        message = f"{subject} took values {vals}" if vals else f"{subject} changed"
    if (
        guard.code
        and guard.line
        and kind not in ("size", "size_one", "dtype", "requires_grad", "stride", "ndim")
    ):
        message += f" (guarded at {short_path(guard.file)}:{guard.line}: `{shorten(guard.code, 60)}`)"
    if len(g["guards"]) > 1:
        others = ", ".join(describe_source(x.source) for x in g["guards"][1:] if x.source)
        resumed = any(c.startswith(RESUME_PREFIX) for c in g["co_names"])
        if others and resumed:  # only a graph break makes resume functions
            message += f" (the same change reaches {others} in the code resumed after a graph break)"
        elif others:
            message += f" (the same change is also guarded as {others})"
    holds = held(guard, g, entry_ids, frames)
    fix, actions = cause_fix(kind, fix_t, guard, g, holds, hit_limit)
    if hit_limit:
        fix += "; this frame hit the recompile limit and now runs eagerly"
    return RecompileCause(
        function,
        file,
        g["rc"].line,
        kind,
        subject,
        tuple(g["values"]),
        g["count"],
        message,
        fix,
        tuple(g["ids"]),
        guard=guard.text,
        hint=guard.hint,
        actions=tuple(actions),
    )


def root_causes(
    recompiles: Iterable[Recompile],
    limit_hits: Iterable[RecompileLimitHit] = (),
    entry_ids: set | None = None,
    states=None,
    frames: set | None = None,
) -> list[RecompileCause]:
    """Group recompiles into causes, per (rank-agnostic) user function; most recompiles first.

    `entry_ids`: the compile ids whose frame the user's compiled call entered directly (its
    arguments are the user's tensors); None when the trace does not say (every frame counts).
    `states(compile_id)`: a cache entry's guarded values (fxlens.trace.guardtree), to find the
    entry each call came nearest to; None: the trace has no guard trees. `frames`: (function, file)
    of the frames the user's call entered, which a resumed frame's arguments come from.
    """
    groups = _group_by_guard(recompiles, states)
    limited = {(h.function, h.file) for h in limit_hits}
    merged = _merge_across_names(groups)
    causes = [
        _cause(function, file, g, (function, file) in limited, entry_ids, frames)
        for (function, file, *_), g in merged.items()
    ]
    causes.sort(key=lambda c: -c.count)
    return _merge_same_call(causes)


def _merge_same_call(causes: list[RecompileCause]) -> list[RecompileCause]:
    """Frames of a library model (its forward, the loss, a decorator resumed after a break) are all
    placed at the user's one call line; the same change seen by each is one cause there."""
    out: dict[tuple, RecompileCause] = {}
    for c in causes:
        key = (c.file, c.line, c.kind, c.values)
        first = out.get(key)
        if first is None:
            out[key] = c
        elif c.function != first.function:
            note = f"{first.message} (also seen by {c.function}, called from the same line)"
            if "(also seen by " in first.message:
                note = (
                    first.message[: -len(", called from the same line)")]
                    + f", {c.function}, called from the same line)"
                )
            out[key] = replace(
                first,
                count=first.count + c.count,
                compile_ids=first.compile_ids + c.compile_ids,
                message=note,
            )
    return list(out.values())


def session_causes(session) -> list[RecompileCause]:
    """Root causes of a Session per rank; the same cause on several ranks listed once with all its ranks."""
    merged: dict[tuple, RecompileCause] = {}
    for r in session.ranks:
        if not r.recompiles:
            continue
        states = entry_states(r.by_compile)
        ids, frames = entry_ids(r.entry_stacks), entry_frames(r.entry_stacks)
        code_files = {m.compile_id: m.code_file for m in session.metrics if m.rank == r.rank}
        for c in root_causes(r.recompiles, r.limit_hits, ids, states, frames):
            c = marks_together(c, lambda cid, rank=r.rank: session.records(cid, rank))
            c = grad_mode_in_library(c, code_files.get, ids)
            key = (c.function, c.file, c.kind, c.subject, c.values)
            seen = merged.get(key)
            if seen is None:
                merged[key] = replace(c, ranks=(r.rank,))
            else:  # keep the fuller account (more recompiles seen on that rank), all ranks listed
                best = c if c.count > seen.count else seen
                merged[key] = replace(best, ranks=(*seen.ranks, r.rank))
    return sorted(merged.values(), key=lambda c: -c.count)
