"""What a doctor finding is: one record `{kind, message, file, line, fix, cost_ms, function, actions}`.

`actions` are the fix as data (fxlens.report.fixes): what `fxlens fix --session` on doctor's session
tries (`config`, `hook`) or states as a code change (`code`); empty only for the kinds in NO_ACTION.

Shared by fxlens.doctor.findings (code findings and the ranking) and fxlens.doctor.speed (the
findings that rest on measured speed).
"""

from __future__ import annotations

from fxlens.report.fixes import action
from fxlens.trace.userframes import short_path


def loc(file: str | None, line: int | None) -> str:
    return f"{short_path(file)}:{line}" if file else "?"


def simple(function: str | None) -> str:
    """`Model.forward` -> `forward`, `DistributedDataParallel(Model).forward` -> `forward`."""
    return (function or "?").rsplit(".", 1)[-1]


# finding kinds whose `fix` names no change at all, so they carry no action: a command to run or a
# measurement to redo (kind -> why)
NO_ACTION = {
    "compiled_run_failed": "its fix is a command to run (`fxlens bisect`), not a change",
    "no_graph_captured": "without a wrapper to blame, the graph breaks listed with it carry the fixes",
    "timing_inconclusive": "a measurement to redo, nothing to change",
    "eager_implausibly_slow": "a measurement to redo, nothing to change",
    "eager_python_overhead": "nothing to fix: the overhead is what torch.compile removes",
}


def site(at: dict) -> dict:
    """The params naming a torch.compile call site, as fxlens.fix.child matches it (`site_key`)."""
    return {"site_key": f"{at['file']}:{at['line']}", "site": loc(at["file"], at["line"])}


def code_action(text: str, file: str | None = None, line: int | None = None) -> dict:
    """A change to the user's code, in the finding's own words: stated by `fxlens fix`, not tried
    (FILE:LINE keeps two findings with the same words apart)."""
    return action("change_code", text=text, **({"site": loc(file, line)} if file else {}))


def finding(
    kind: str,
    message: str,
    file,
    line,
    fix: str,
    cost_ms: float,
    function: str | None,
    actions: list[dict] | None = None,
) -> dict:
    return {
        "kind": kind,
        "message": message,
        "file": file,
        "line": line,
        "fix": fix,
        "cost_ms": round(max(cost_ms, 0.0), 3),
        "function": function,
        "actions": list(actions or []),
    }
