"""The fixes a run's findings ask for, gathered from its report and its recorder, deduplicated.

Every finding that can be fixed carries its fixes as data (`actions`, fxlens.report.fixes): the
recompile causes (fxlens.report.rootcause), and any other finding of the report with an `actions`
list, and, in a session of `fxlens doctor`, every doctor finding's `actions`. Graph breaks and
recompile-limit hits get theirs here, from BREAK_ACTIONS and the limit; a loop Dynamo unrolled
(`compile_lines.unrolled_loop`, fxlens.report.loopfix) carries its own; the
recorder of the first run adds what only a run can tell (a compiled module never called, a
compiled DDP wrapper). Code fixes get their patch here.
"""

from __future__ import annotations

import os

from fxlens.fix import patches
from fxlens.fix.methods import called_methods
from fxlens.fix.usage import short_batch
from fxlens.report.fixes import (
    BREAK_ACTIONS,
    action,
    config_action,
    current,
    describe,
    how,
    key,
    library_break_actions,
)
from fxlens.trace.userframes import location


def _entry(finding: str, act: dict, file: str | None = None, line: int | None = None) -> dict:
    return {"finding": finding, "action": current(act), "file": file, "line": line}


def _from_report(report: dict) -> list[dict]:
    out = []
    for c in report.get("recompile_causes") or []:
        finding = f"recompile of {c['function']} ({location(c.get('file'), c.get('line'))}): {c['message']}"
        out += [
            _entry(finding, _owned(a, c["function"]), c.get("file"), c.get("line"))
            for a in c.get("actions") or []
        ]
    for b in report.get("graph_breaks") or []:
        text = f"{b.get('reason') or ''} {b.get('explanation') or ''}"
        acts = library_break_actions(b.get("library")) + next(
            (acts for pattern, acts in BREAK_ACTIONS if pattern.search(text)), []
        )
        finding = f"graph break at {location(b.get('file'), b.get('line'))}: {b.get('reason')}"
        out += [_entry(finding, a, b.get("file"), b.get("line")) for a in acts]
    for h in report.get("recompile_limit_hits") or []:
        limit = h.get("limit") or 8
        finding = (
            f"{h['function']} ({location(h.get('file'), h.get('line'))}) hit the recompile limit ({limit})"
        )
        out.append(
            _entry(
                finding,
                config_action("recompile_limit", limit * 8, "limit_hits"),
                h.get("file"),
                h.get("line"),
            )
        )
    # a loop Dynamo unrolled over modules of one class: compile that class once
    loop = (report.get("compile_lines") or {}).get("unrolled_loop")
    if loop:
        out += [_entry(loop["message"], a, loop.get("file"), loop.get("line")) for a in loop["actions"]]
    # any other finding that carries its fixes as data (e.g. a repeated block: a regional compile)
    for name, items in report.items():
        if name in ("recompile_causes", "graph_breaks") or not isinstance(items, list):
            continue
        for item in items:
            if isinstance(item, dict) and item.get("actions"):
                finding = item.get("message") or item.get("finding") or name
                out += [_entry(finding, a, item.get("file"), item.get("line")) for a in item["actions"]]
    return out


# methods that call the module itself (`self(...)`) in a loop: compiling the module in place serves
# them; compiling the method would trace the whole loop
_CALLS_SELF = {"generate", "sample", "greedy_search", "beam_search"}


def _owned(act: dict, function: str) -> dict:
    """A hook action that names no compiled code (torch compiled its own wrapper of a module) gets
    the report's name of the recompiled code, so the re-run applies it there and only there."""
    params = act.get("params") or {}
    if how(act) != "hook" or params.get("function") or params.get("owner") or act["kind"] not in _PER_CODE:
        return act
    return {**act, "params": {**params, "owner": function}}


# hook kinds that apply to one compiled code (the others name a compile site or a block)
_PER_CODE = {
    "mark_dynamic",
    "mark_dynamic_together",
    "maybe_mark_dynamic",
    "mark_unbacked",
    "dynamic",
    "dynamic_default",
}


def _from_recorder(objects: dict, calls: dict, compile_failed: bool = False) -> list[dict]:
    """Compiled modules the script never called, or compiled as a DDP wrapper (first run's recorder).
    A compile that failed (fullgraph=True and a break) is not a module never called."""
    out = []
    for site, info in objects.items():
        file, line, _ = site.rsplit(":", 2)
        site_key = f"{file}:{line}"
        where = location(file, int(line))
        if info.get("ddp"):
            finding = f"the DDP wrapper is compiled at {where}: torch's docs compile the module inside it"
            out.append(
                _entry(finding, action("compile_inside_ddp", site_key=site_key, site=where), file, int(line))
            )
        elif info.get("module") and not calls.get(site) and not compile_failed:
            out += _never_called(file, int(line), site_key, where, bool(info.get("in_place")))
    return out


def _never_called(file: str, line: int, site_key: str, where: str, in_place: bool) -> list[dict]:
    """A compiled module the script never called: it calls the module's own methods instead."""
    methods = called_methods(file, line)
    said = f" (the script calls its {', '.join(f'`{m}`' for m in methods)})" if methods else ""
    how = "`module.compile()`" if in_place else "what torch.compile returned"
    finding = f"the module compiled at {where} was never called through {how}{said}"
    out = []
    if not in_place and (not methods or _CALLS_SELF & set(methods)):
        out.append(_entry(finding, action("compile_in_place", site_key=site_key, site=where), file, line))
    own = [m for m in methods if m not in _CALLS_SELF]
    if own:
        act = action("compile_methods", methods=own, site_key=site_key, site=where)
        out.append(_entry(finding, act, file, line))
    return out


def _tensor_lr(entry: dict, script: str, loaders) -> dict | None:
    got = patches.tensor_lr(script)
    if got is None:
        return None
    patch, line, lr = got
    return {**entry, "action": action("tensor_lr", lr=lr), "patch": patch, "file": script, "line": line}


def _drop_last(entry: dict, script: str, loaders) -> dict | None:
    # the loaders whose last batch is short, as the first run made them (not the first in the file)
    short = [
        ld for ld in loaders if short_batch(ld) and os.path.realpath(ld["file"]) == os.path.realpath(script)
    ]
    got = patches.drop_last(script, [ld["line"] for ld in short] if loaders else None)
    if got is None:
        return None
    return {**entry, "patch": got[0], "file": script, "line": got[1]}


def _keep_tensor(entry: dict, script: str, loaders) -> dict | None:
    if not entry.get("file") or not os.path.isfile(entry["file"]):
        return None
    got = patches.keep_tensor(entry["file"], entry["line"] or 0)
    if got is None:
        return None
    return {**entry, "action": action("keep_tensor", expr=got[1]), "patch": got[0]}


# code kind -> its patch writer `(entry, script, loaders) -> entry with its patch, or None when the
# line to patch is not found`; a code kind with none is stated in words only
PATCH_WRITERS = {"tensor_lr": _tensor_lr, "drop_last": _drop_last, "keep_tensor": _keep_tensor}


def _with_patch(entry: dict, script: str, loaders: list[dict] = ()) -> dict | None:
    """A code fix with its patch filled in (and its words from the patch); None when fxlens cannot
    find the line to patch (the finding's own text still states the fix)."""
    write = PATCH_WRITERS.get(entry["action"]["kind"])
    return write(entry, script, loaders) if write else {**entry, "patch": None}


def _from_doctor(findings: list[dict]) -> list[dict]:
    """The fixes of `fxlens doctor`'s findings (a doctor session): each finding's `actions`."""
    out = []
    for f in findings:
        out += [_entry(f["message"], a, f.get("file"), f.get("line")) for a in f.get("actions") or []]
    return out


def gather(
    report: dict,
    script: str,
    recorder: dict | None = None,
    extra: list[dict] = (),
    doctor: list[dict] = (),
    code_files: dict | None = None,
) -> list[dict]:
    """Every fix to try or state, once: `{finding, action, how, fix, file, line, patch}`; `doctor`:
    the findings of `fxlens doctor` when the session is doctor's."""
    entries = _from_report(report) + _from_doctor(doctor)
    if recorder:
        failed = bool(report.get("compile_failed") or report.get("failures"))
        entries += _from_recorder(recorder.get("objects") or {}, recorder.get("calls") or {}, failed)
    entries += [_entry("asked for with --try", a) for a in extra]
    out: dict[tuple, dict] = {}
    for e in entries:
        e = _with_code_files(e, code_files or {})
        e = _with_patch(e, script, (recorder or {}).get("loaders") or [])
        if e is None:
            continue
        k = key(e["action"])
        if k in out:  # one fix answering several findings: tried once, every finding named
            seen = out[k]
            if e["finding"] not in seen["finding"]:
                seen["finding"] += f"; {e['finding']}"
            t_new = e["action"]["params"].get("target")
            t_old = seen["action"]["params"].get("target")
            if t_new and t_old and t_new not in t_old.split(","):  # it should improve both
                seen["action"] = {
                    **seen["action"],
                    "params": {**seen["action"]["params"], "target": f"{t_old},{t_new}"},
                }
            continue
        out[k] = {**e, "how": how(e["action"]), "fix": describe(e["action"])}
    return list(out.values())


def _with_code_files(entry: dict, code_files: dict) -> dict:
    """The action names the compiled frame's own files (from torch's trace), so the re-run's hook
    matches the compiled object (a library's module compiled at the user's line), not the call line."""
    params = entry["action"].get("params") or {}
    fn = params.get("function")
    files = code_files.get((fn, params.get("file"))) if fn else None
    if not files or params.get("code_files"):
        return entry
    return {**entry, "action": {**entry["action"], "params": {**params, "code_files": sorted(files)}}}


def code_files_of(session) -> dict:
    """(function, user file) -> the files of the code torch compiled for it (compilation metrics)."""
    out: dict = {}
    for m in session.metrics:
        if m.code_file and m.co_name:
            out.setdefault((m.co_name, m.file), set()).add(m.code_file)
            out.setdefault((m.function.rsplit(".", 1)[-1], m.file), set()).add(m.code_file)
    return out


def _try_regional(arg: str) -> dict | None:
    return (
        action("regional", block=arg, site="each torch.compile call of a module")
        if arg.isidentifier()
        else None
    )


def _try_nested_region(arg: str) -> dict | None:
    return (
        action("nested_region", block=arg, site="each torch.compile call of a module")
        if arg.isidentifier()
        else None
    )


def _try_dynamic(arg: str) -> dict | None:
    return None if arg else action("dynamic")


def _try_config(arg: str) -> dict | None:
    if "=" not in arg:
        return None
    name, _, raw = arg.partition("=")
    name = name.strip()
    from fxlens.errors import FxlensError
    from fxlens.fix.appliers import config_known

    if not config_known(name):
        raise FxlensError(
            f"the running torch has no config switch {name!r} "
            "(NAME is torch._dynamo.config's, or inductor.NAME / functorch.NAME)"
        )
    return config_action(name, _value(raw), "recompiles")


def _value(raw: str):
    """`true`/`false`, an int, a float, else the string itself."""
    if raw.lower() in ("true", "false"):
        return raw.lower() == "true"
    for kind in (int, float):
        try:
            return kind(raw)
        except ValueError:
            pass
    return raw


# kind -> (`--try` syntax, parser of what follows `KIND:`; None when it does not parse): the kinds
# `--try` can ask for
TRIES = {
    "regional": ("regional:CLASS", _try_regional),
    "nested_region": ("nested_region:CLASS", _try_nested_region),
    "dynamic": ("dynamic", _try_dynamic),
    "config": ("config:NAME=VALUE", _try_config),
}


def parse_try(spec: str) -> dict:
    """`--try regional:CLASS`, `--try config:NAME=VALUE`, `--try dynamic` (TRIES) as an action."""
    from fxlens.errors import FxlensError

    kind, _, arg = spec.partition(":")
    row = TRIES.get(kind)
    try:
        got = row[1](arg) if row else None
    except FxlensError as e:
        raise FxlensError(f"--try {spec!r}: {e}") from None
    if got is None:
        syntaxes = [s for s, _ in TRIES.values()]
        raise FxlensError(f"--try {spec!r}: expected {', '.join(syntaxes[:-1])} or {syntaxes[-1]}")
    return got


# (kind, pattern on a verdict's why, the kind torch suggests instead): a fix torch refuses at run
# time is followed by the one its error names
_INSTEAD = (
    # mark_dynamic on a dim the model specialises: torch raises ConstraintViolationError and its
    # message suggests maybe_mark_dynamic (dynamic where the code allows, static where it needs)
    ("mark_dynamic", "ConstraintViolationError", "maybe_mark_dynamic"),
)


def replacement(entry: dict, result: dict) -> dict | None:
    """The fix to try instead of ENTRY when its re-run shows torch refused it, else None."""
    act = entry["action"]
    for kind, refused, instead in _INSTEAD:
        if act["kind"] == kind and result["verdict"] == "hurts" and refused in (result.get("why") or ""):
            new = action(instead, **{k: v for k, v in act["params"].items()})
            finding = f"{entry['finding']}; torch refused `{kind}` ({refused}) and suggests `{instead}`"
            return {**entry, "finding": finding, "action": new, "how": how(new), "fix": describe(new)}
    return None
