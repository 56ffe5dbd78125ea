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

from fxlens.trace.records import Recompile, RecompileCause, RecompileLimitHit

_DTYPES = {
    "Float": "float32",
    "Double": "float64",
    "Half": "float16",
    "BFloat16": "bfloat16",
    "Long": "int64",
    "Int": "int32",
    "Short": "int16",
    "Char": "int8",
    "Byte": "uint8",
    "Bool": "bool",
    "ComplexFloat": "complex64",
    "ComplexDouble": "complex128",
}

# (pattern on one failed guard, kind, how to name its subject, what the values are) - first match wins.
# Each pattern's groups: var (the input/global/attribute), plus dim / expected / actual where they exist.
_RULES: list[tuple[re.Pattern, str]] = [
    # tensor 'x' size mismatch at index 0. expected 8, actual 5
    (
        re.compile(
            r"tensor '(?P<var>[^']+)' size mismatch at index (?P<dim>\d+)\. expected (?P<exp>\S+), actual (?P<act>\S+)"
        ),
        "size",
    ),
    # tensor 'x' stride mismatch at index 0. expected 4, actual 1
    (
        re.compile(
            r"tensor '(?P<var>[^']+)' stride mismatch at index (?P<dim>\d+)\. expected (?P<exp>\S+), actual (?P<act>\S+)"
        ),
        "stride",
    ),
    # tensor 'x' rank mismatch. expected 2, actual 3
    (
        re.compile(r"tensor '(?P<var>[^']+)' rank mismatch\. expected (?P<exp>\S+), actual (?P<act>\S+)"),
        "ndim",
    ),
    # tensor 'x' dtype mismatch. expected Float, actual Double
    (
        re.compile(r"tensor '(?P<var>[^']+)' dtype mismatch\. expected (?P<exp>\w+), actual (?P<act>\w+)"),
        "dtype",
    ),
    # tensor 'x' requires_grad mismatch. expected requires_grad=0
    (
        re.compile(r"tensor '(?P<var>[^']+)' requires_grad mismatch\. expected requires_grad=(?P<exp>\d)"),
        "requires_grad",
    ),
    # tensor 'x' device mismatch. expected cpu, actual cuda:0 (wording varies)
    (re.compile(r"tensor '(?P<var>[^']+)' device"), "device"),
    # tensor 'x' dispatch key set mismatch (grad mode, autocast, requires_grad)
    (re.compile(r"tensor '(?P<var>[^']+)' dispatch key set mismatch"), "dispatch_keys"),
    # self._modules['drop'].training == True  /  L['self'].training == True
    (re.compile(r"(?P<var>[\w\.\[\]'\"]*)\.training == (?P<exp>True|False)"), "training"),
    # G['USE_BIAS'] == True
    (re.compile(r"^G\['(?P<var>[^']+)'\]\S* == (?P<exp>.+)$"), "global"),
    # ___stack1 == 1.726 (a Python number from .item() / float() specialised)
    (re.compile(r"^(?P<var>___stack\d+) == (?P<exp>.+)$"), "item_value"),
    # L['k'] == 0  /  k == 0
    (re.compile(r"^(?:L\['(?P<var>[^']+)'\]|(?P<var2>[A-Za-z_]\w*)) == (?P<exp>.+)$"), "value"),
    # len(L['x']) == 3
    (re.compile(r"^len\((?:L\[')?(?P<var>[^')]+)(?:'\])?\) == (?P<exp>\d+)"), "length"),
    (re.compile(r"___check_global_state"), "global_state"),
    (re.compile(r"___check_(?:obj|type)_id\((?:L\[')?(?P<var>[^',)]+)"), "identity"),
]

FIXES = {
    "size": (
        "mark the dimension dynamic before the first call (`torch._dynamo.mark_dynamic({var}, {dim})`) or "
        "compile with `dynamic=True`; if it is the last, short batch of a DataLoader, pass `drop_last=True` "
        "or pad batches to a fixed size"
    ),
    "stride": "make the input contiguous (`{var}.contiguous()`) before the call, so every call sees one layout",
    "ndim": "call with one rank of tensor, or compile one function per rank",
    "dtype": "cast `{var}` to one dtype before the call (e.g. `{var}.float()`), or keep one compiled function per dtype",
    "requires_grad": (
        "call with consistent requires_grad: run inference under `torch.no_grad()` or pass "
        "`{var}.detach()`; otherwise one compile per mode is expected"
    ),
    "device": "keep `{var}` on one device for every call",
    "dispatch_keys": "keep grad mode / autocast / requires_grad of `{var}` the same across calls",
    "training": (
        "train/eval switches compile once per mode (expected, two compiles); to avoid it, compile a "
        'separate eval copy or run eval under `torch.compiler.set_stance("eager_on_recompile")`'
    ),
    "global": (
        "the global `{var}` is guarded: pass it as an argument, or make it a constant; every change "
        "recompiles"
    ),
    "item_value": (
        "a Python number from `.item()`/`float()` was specialised: keep it a tensor, or set "
        "`torch._dynamo.config.capture_scalar_outputs = True`"
    ),
    "value": (
        "the Python value `{var}` is specialised: pass it as a tensor, or mark it dynamic "
        "(`torch.compile(..., dynamic=True)`) if it keeps changing"
    ),
    "length": "`{var}` changed length: pad it to a fixed length, or pass a tensor",
    "global_state": "grad mode / autocast / default dtype changed between calls: keep them fixed around the call",
    "identity": "a different object `{var}` was passed: reuse one object (module, function) across calls",
    "other": "see the failed guard; `TORCH_LOGS=recompiles` shows every check",
}


def classify(guard: str) -> tuple[str, str, str, str, str]:
    """(kind, var, dim, expected, actual) of one failed-guard line (with or without its "0/1: " prefix)."""
    text = re.sub(r"^\d+/\d+(?:_\d+)?: ", "", guard.strip())
    for pattern, kind in _RULES:
        m = pattern.search(text)
        if m:
            g = m.groupdict()
            var = g.get("var") or g.get("var2") or ""
            return kind, var, g.get("dim") or "", g.get("exp") or "", g.get("act") or ""
    return "other", "", "", "", ""


def _pretty(var: str) -> str:
    """`self._modules['drop']` -> `self.drop`, `L['x']` -> `x`."""
    var = re.sub(r"\._(?:modules|parameters|buffers)\['([^']+)'\]", r".\1", var)
    return var.replace("L['", "").replace("']", "")


def _subject(kind: str, var: str, dim: str) -> str:
    name = _pretty(var)
    return {
        "size": f"input `{name}`, dim {dim}",
        "stride": f"stride of `{name}`, dim {dim}",
        "ndim": f"rank of `{name}`",
        "dtype": f"dtype of `{name}`",
        "requires_grad": f"requires_grad of `{name}`",
        "device": f"device of `{name}`",
        "dispatch_keys": f"dispatch keys of `{name}`",
        "training": "train/eval mode" + (f" of `{name}`" if name else ""),
        "global": f"global `{name}`",
        "item_value": "a Python number read from a tensor",
        "value": f"Python value `{name}`",
        "length": f"length of `{name}`",
        "global_state": "global torch state",
        "identity": f"identity of `{name}`",
    }.get(kind, "a guard")


def _values(kind: str, exp: str, act: str) -> list[str]:
    if kind == "dtype":
        return [_DTYPES.get(v, v) for v in (exp, act) if v]
    if kind == "requires_grad":
        return ["False" if exp == "0" else "True", "True" if exp == "0" else "False"]
    if kind == "training":
        return ["train" if exp == "True" else "eval", "eval" if exp == "True" else "train"]
    return [v for v in (exp, act) if v]


# kinds whose values identify the change itself, so the same values under two names are one cause
_MERGEABLE = {"size", "stride", "ndim", "dtype", "requires_grad", "device"}


def _group_by_guard(recompiles: Iterable[Recompile]) -> dict[tuple, dict]:
    """Failed guards grouped per (function, file, kind, var, dim); each recompile counted once, under
    the first guard kind not seen before in its function (the change that caused it)."""
    groups: dict[tuple, dict] = {}
    seen_kinds: dict[tuple, set] = {}
    for rc in recompiles:
        fkey = (rc.function, rc.file)
        seen = seen_kinds.setdefault(fkey, set())
        parsed = [classify(g) for g in rc.failed_guards]
        cause = next((p for p in parsed if (p[0], p[1], p[2]) not in seen), parsed[0] if parsed else None)
        counted = False
        for kind, var, dim, exp, act in parsed:
            key = (*fkey, kind, var, dim)
            grp = groups.setdefault(
                key, {"rc": rc, "values": [], "count": 0, "ids": [], "kind": kind, "var": var, "dim": dim}
            )
            # the first (newest) failure carries the value this call had; older entries repeat history
            for v in _values(kind, exp, act):
                if v not in grp["values"]:
                    grp["values"].append(v)
            if cause is not None and (kind, var, dim) == cause[:3] and not counted:
                counted = True
                grp["count"] += 1
                grp["ids"].append(rc.compile_id)
            seen.add((kind, var, dim))
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
            merged[mkey] = {**g, "vars": [var]}
        else:
            m["count"] += g["count"]
            m["ids"] += g["ids"]
            m["vars"].append(var)
    return merged


def _cause(function: str, file: str, g: dict, hit_limit: bool) -> RecompileCause:
    """One merged group as a cause: what changed, in words, and the fix."""
    kind, var, dim = g["kind"], g["vars"][0], g["dim"]
    name = _pretty(var) or "x"
    subject = _subject(kind, var, dim)
    vals = ", ".join(g["values"])
    message = f"{subject} took values {vals}" if vals else f"{subject} changed"
    if kind == "dtype":
        message = f"{subject} took {vals}"
    elif len(g["values"]) == 1:
        message = f"{subject} was specialised to {vals}, then changed"
    if len(g["vars"]) > 1:
        others = ", ".join(f"`{_pretty(v)}`" for v in g["vars"][1:])
        message += f" (the same change reaches {others} in the code resumed after a graph break)"
    fix = FIXES.get(kind, FIXES["other"]).format(var=name, dim=dim or 0)
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
    )


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
    return causes


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
