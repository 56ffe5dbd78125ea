"""Root-cause recompiles: a storm across a function and its resume functions becomes one cause each.

Each recompile lists, newest first, why every earlier compile of the frame failed its guards. The
cause of a recompile is the failure kind that is new at that recompile (the others were already
explained by earlier ones); every failure still contributes the values it shows, so a batch-size
storm reads "input `x`, dim 0 took values 8, 5, 3".
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace

from fxlens.trace.guards import FailedGuard, describe_source, parse_failed_guard, tensor_hint
from fxlens.trace.records import Recompile, RecompileCause, RecompileLimitHit
from fxlens.trace.userframes import is_library_code, short_path

# What each kind of failed guard means and what to change, one row per kind (the patterns that
# read torch's text are fxlens.trace.guards.RULES). {name}: the user's name for the guarded source
# ("input_ids", "the first positional argument"); {t}: a variable to write in code; {dim}; {text}:
# torch's guard. Fixes are right for training code: none detaches a tensor or drops gradients.
CAUSES: dict[str, tuple[str, str]] = {
    "size": (
        "input {name}, dim {dim}",
        "one recompile on a new size is expected: torch then compiles that dim as dynamic (automatic "
        "dynamic shapes); if sizes keep changing, ",
    ),
    "size_one": (
        "size 1 of {name}, dim {dim}",
        "torch compiled that dim for sizes >= 2 and specialises size 1 (a batch or sequence of one): "
        "expected once; to avoid it use `torch._dynamo.decorators.mark_unbacked({t}, {dim})` or avoid "
        "size-1 inputs (`drop_last=True`)",
    ),
    "size_branch": (
        "a branch on the size of {name}, dim {dim}",
        "the code compares this size (`{code}`): each side of the branch compiles once, expected when "
        "sizes cross the threshold; move the branch out of the compiled function if it flips often",
    ),
    "shape_relation": (
        "a relation between sizes of {name}",
        "an earlier compile assumed `{text}`; inputs whose sizes keep that relation reuse one graph",
    ),
    "stride": (
        "stride of {name}, dim {dim}",
        "make the input contiguous (`{t}.contiguous()`) before the call",
    ),
    "ndim": ("rank of {name}", "call with one rank of tensor, or compile one function per rank"),
    "dtype": (
        "dtype of {name}",
        "cast {name} to one dtype before the call (e.g. `{t}.float()`), or expect one compile per dtype",
    ),
    "requires_grad": (
        "requires_grad of {name}",
        "one compile per requires_grad setting is expected (e.g. a frozen then unfrozen layer, or an "
        "input that needs gradients in training only); do not `.detach()` a tensor that needs "
        "gradients to avoid it: gradients would silently stop",
    ),
    "device": ("device of {name}", "keep {name} on one device for every call"),
    "dispatch_keys": (
        "grad mode, autocast or requires_grad of {name}",
        "one compile per mode is expected (training vs `torch.no_grad()`, autocast on vs off)",
    ),
    "grad_mode": (
        "grad mode (training vs `torch.no_grad()`)",
        "the function ran with and without gradients (a training step and a `torch.no_grad()` "
        "validation): one compile each is expected; nothing to change unless it keeps recompiling",
    ),
    "autocast": (
        "autocast state",
        "called inside and outside `torch.autocast`: one compile per state is expected; keep the call "
        "always inside (or always outside) autocast",
    ),
    "default_dtype": (
        "the default dtype",
        "`torch.set_default_dtype` changed between calls: set it once at start-up",
    ),
    "deterministic": (
        "deterministic-algorithms mode",
        "`torch.use_deterministic_algorithms` changed between calls: set it once at start-up",
    ),
    "num_threads": (
        "the number of CPU threads",
        "`torch.set_num_threads` changed between calls (a library or DataLoader worker set-up can do "
        "this): set it once before the first compiled call",
    ),
    "matmul_precision": (
        "matmul precision flags (TF32 / reduced precision)",
        "set `torch.backends` precision flags once at start-up, not between calls",
    ),
    "torch_function_mode": (
        "the torch function mode stack",
        "a TorchFunctionMode or `torch.device(...)` context differs between calls: keep it the same",
    ),
    "global_state": (
        "global torch state ({text})",
        "keep grad mode, autocast and torch's global flags fixed around the call",
    ),
    "training": (
        "train/eval mode of {name}",
        "train/eval switches compile once per mode (expected, two compiles); to avoid it, compile a "
        'separate eval copy or run eval under `torch.compiler.set_stance("eager_on_recompile")`',
    ),
    "global": (
        "global {name}",
        "the global {name} is guarded: pass it as an argument, or make it a constant; every change recompiles",
    ),
    "item_value": (
        "a Python number read from a tensor",
        "a Python number from `.item()`/`float()` was specialised: keep it a tensor, or set "
        "`torch._dynamo.config.capture_scalar_outputs = True`",
    ),
    # ___stackN == v where the graph broke on a call that reads no tensor (os.getpid(), time.time())
    # torch's "Cache line invalidated because X got deallocated": a note, never blamed beside a guard
    "cache_note": (
        "a compile dropped by torch ({text})",
        "torch dropped a cached compile because an object it was keyed on ({name}) was freed: keep that "
        "object (a module, a function) alive and reuse it across calls",
    ),
    "stack_value": (
        "a value returned by a call that broke the graph (`{code}`)",
        "`{code}` breaks the graph and its result is a constant of the resumed graph: each new "
        "value recompiles; compute it outside the compiled function and pass it in (as a tensor if it "
        "keeps changing)",
    ),
    "module_attr": (
        "module attribute {name}",
        "integer attributes of an nn.Module are static (torch's HINT): every value compiles anew; "
        "register it as a buffer (`self.register_buffer(...)`, a tensor the graph reads) or set "
        "`torch._dynamo.config.allow_unspec_int_on_nn_module = True`",
    ),
    "value": (
        "Python value {name}",
        "the Python value {name} is specialised: pass it as a tensor, or mark it dynamic "
        "(`torch.compile(..., dynamic=True)`) if it keeps changing",
    ),
    "length": ("length of {name}", "{name} changed length: pad it to a fixed length, or pass a tensor"),
    "none": ("{name} being None", "pass {name} on every call or on none: each case compiles once"),
    "identity": (
        "identity of {name}",
        "a different object {name} was passed: reuse one object (module, function) across calls",
    ),
    "type": ("type of {name}", "{name} changed type between calls: pass one type"),
    "other": ("guard `{text}`", "torch's guard `{text}` failed; `TORCH_LOGS=recompiles` shows every check"),
}


def classify(guard: str) -> tuple[str, str, str, str, str]:
    """(kind, source, dim, expected, actual) of one failed-guard line (with or without "0/1: ")."""
    g = parse_failed_guard(guard)
    return g.kind, g.source, g.dim, g.expected, g.actual


def _guards_of(rc: Recompile) -> list[FailedGuard]:
    return list(rc.guards) if rc.guards else [parse_failed_guard(t) for t in rc.failed_guards]


def format_for_guard(template: str, g: FailedGuard) -> str:
    name = describe_source(g.source) if g.source else "the input"
    t = tensor_hint(g.source) or "x"
    out = template.format(name=name, t=t, dim=g.dim or 0, text=g.text[:120], code=g.code[:80] or g.text)
    if t == "t" and "{t}" in template:  # a wrapper's *args: the record has no variable name
        out += " (`t`: the tensor your code passes in that position)"
    return out


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


def _group_by_guard(recompiles: Iterable[Recompile]) -> dict[tuple, dict]:
    """Failed guards grouped per (function, file, kind, source, dim); each recompile counted once,
    under the first guard not seen before in its function (the change that caused it)."""
    groups: dict[tuple, dict] = {}
    seen_kinds: dict[tuple, set] = {}
    for rc in recompiles:
        fkey = (rc.function, rc.file)
        seen = seen_kinds.setdefault(fkey, set())
        # torch's cache note is blamed only when it is all the recompile says (issue 34: one recompile
        # of a type-id storm blamed on "Cache line invalidated")
        parsed = [p for p in _guards_of(rc) if p.kind != "cache_note"] or _guards_of(rc)
        cause = next((p for p in parsed if _identity(p) not in seen), parsed[0] if parsed else None)
        counted = False
        for g in parsed:
            key = (*fkey, *_identity(g))
            grp = groups.setdefault(key, {"rc": rc, "guard": g, "values": [], "count": 0, "ids": []})
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
    return merged


def _cause(function: str, file: str, g: dict, hit_limit: bool) -> RecompileCause:
    """One merged group as a cause: what changed, in words, torch's own guard, and the fix."""
    guard: FailedGuard = g["guards"][0]
    kind = guard.kind
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
    if guard.code and guard.line and kind not in ("size", "dtype", "requires_grad", "stride", "ndim"):
        message += f" (guarded at {short_path(guard.file)}:{guard.line}: `{guard.code[:60]}`)"
    if len(g["guards"]) > 1:
        others = ", ".join(describe_source(x.source) for x in g["guards"][1:] if x.source)
        if others:
            message += f" (the same change reaches {others} in the code resumed after a graph break)"
    fix = format_for_guard(fix_t, guard)
    if kind == "other" and guard.hint:  # no rule of ours: torch's own HINT is the best fix there is
        fix = f"torch's hint: {guard.hint}"
    if kind == "size":
        fix = _size_fix(guard, fix, third=len(g["values"]) > 2)
    elif kind in _CODE_KINDS and guard.file and is_library_code(guard.file):
        fix = (
            f"the guard is in {guard.file}:{guard.line}, a library's code your script does not control: "
            "one compile per distinct way the library calls that frame is expected; only if the frame "
            "hits the recompile limit, raise `torch._dynamo.config.recompile_limit`"
        )
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
    )


# kinds that guard what a frame's own code did with its arguments (their count, type, identity, a
# Python value): when that code is a library's, the fix cannot be to change it
_CODE_KINDS = {"length", "type", "identity", "value", "none", "module_attr", "other"}

# a tensor of a KV cache, as torch names its source (`kwargs['past_key_values'].layers[0].keys`,
# `...key_cache[0]`): it grows by one token per decoding step
_KV_CACHE = re.compile(r"past_key_value|cache|\.(keys|values)\b", re.I)


def _size_fix(guard: FailedGuard, automatic: str, third: bool) -> str:
    """What to do about a size change, for the tensor it is: a KV cache (generation), a batch
    dim (a DataLoader's short last batch) or another dim (sequence lengths)."""
    if guard.source and _KV_CACHE.search(guard.source):
        return (
            "the KV cache grows by one token at every decoding step: "
            + ("" if third else "one recompile is expected, then torch compiles that dim as dynamic; ")
            + "to compile one graph for every step, give generation a static cache (HF: "
            '`model.generate(..., cache_implementation="static")`)'
        )
    todo = "mark it dynamic before the first call (`torch._dynamo.mark_dynamic({t}, {dim})`)"
    todo += (
        ", pad to a few fixed lengths, or for the last short batch of a DataLoader pass `drop_last=True`"
        if str(guard.dim or 0) == "0"
        else " or pad to a few fixed lengths"
    )
    if third:  # a third size: the dim stayed static
        return "the dim stayed static (`dynamic=False`, `mark_static`, or a guard specialised it): " + (
            format_for_guard(todo, guard)
        )
    return automatic + format_for_guard(todo, guard)


def root_causes(
    recompiles: Iterable[Recompile], limit_hits: Iterable[RecompileLimitHit] = ()
) -> list[RecompileCause]:
    """Group recompiles into causes, per (rank-agnostic) user function; most recompiles first."""
    groups = _group_by_guard(recompiles)
    limited = {(h.function, h.file) for h in limit_hits}
    merged = _merge_across_names(groups)
    causes = [
        _cause(function, file, g, (function, file) in limited) for (function, file, *_), g in merged.items()
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
        for c in root_causes(r.recompiles, r.limit_hits):
            key = (c.function, c.file, c.kind, c.subject, c.values)
            seen = merged.get(key)
            if seen is None:
                merged[key] = replace(c, ranks=(r.rank,))
            else:  # keep the fuller account (more recompiles seen on that rank), all ranks listed
                best = c if c.count > seen.count else seen
                merged[key] = replace(best, ranks=(*seen.ranks, r.rank))
    return sorted(merged.values(), key=lambda c: -c.count)
