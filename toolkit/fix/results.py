"""One fix's result for `fxlens fix`: its verdict from the re-run, and its outputs judged.

The re-run's compiled outputs are judged against the first run's, and where those differ, against
the script run eagerly (the first compiled run may be the one that differs from eager); a fix the
re-run did not apply says why, with what the script compiled.
"""

from __future__ import annotations

from pathlib import Path

from fxlens.fix import measure
from fxlens.fix.runs import error_line
from fxlens.report.fixes import target
from fxlens.trace.userframes import short_path


def fix_result(entry: dict, base: dict, run: dict | None, reference: dict | None, eager=None) -> dict:
    """One fix's JSON entry from its re-run (None for a code fix: not tried). EAGER() gives the
    script's outputs run eagerly (made once, when a re-run's outputs differ from the first run's)."""
    out = {
        "finding": entry["finding"],
        "fix": entry["fix"],
        "how": entry["how"],
        "kind": entry["action"]["kind"],
        "params": entry["action"].get("params") or {},
        "file": entry.get("file"),
        "line": entry.get("line"),
        "applied": False,
        "before": base["measures"],
        "after": None,
        "outputs_equal": None,
        "outputs": "",
        "outputs_difference": None,
        "verdict": "not tried",
        "why": "a change to your code: fxlens states it as a patch and does not apply it",
        "patch": entry.get("patch"),
        "run": None,
        "speed": None,
    }
    if run is None:
        return out
    applied = bool(run["applied"].get("0"))
    equal, said, diff = outputs_judged(base, run, reference, eager)
    failed = ""
    if run["exit_code"] and not base["exit_code"]:
        why = error_line(Path(run["dir"]) / "output.log")
        failed = f"the re-run {run['ended']} (the first run did not)" + (f": {why}" if why else "")
        failed += f"; see {run['dir']}/output.log"
    out.update(
        applied=applied,
        after=run["measures"] or None,
        outputs_equal=equal,
        outputs=said,
        outputs_difference=diff,
        run=run["dir"],
        seconds=run["seconds"],
        speed={"before": base["speed"], "after": run["speed"]} if run["speed"] or base["speed"] else None,
    )
    out["verdict"], out["why"] = measure.verdict(
        target(entry["action"]),
        base["measures"],
        run["measures"] or {},
        equal,
        failed,
        "" if applied and not failed else _not_applied(entry["action"], run, failed),
    )
    if run["notes"].get("0") and out["verdict"] != "not applied":
        out["why"] += "; " + "; ".join(run["notes"]["0"])
    return out


def _not_applied(act: dict, run: dict, failed: str) -> str:
    """Why a fix was not applied (empty when it was, or when the run failed first: that is its own
    verdict): what the applier noted, else what the action names against what the script compiled."""
    if run["applied"].get("0") or failed:
        return ""
    notes = "; ".join(run["notes"].get("0") or [])
    p = act.get("params") or {}
    if notes:
        said = notes
    elif p.get("function"):
        files = p.get("code_files")
        said = f"no torch.compile call of the re-run compiled `{p['function']}`" + (
            f" of {', '.join(short_path(f) for f in files)}" if files else ""
        )
    elif p.get("owner"):
        said = f"no torch.compile call of the re-run compiled `{p['owner']}`"
    elif p.get("site_key"):
        said = f"no torch.compile call of the re-run at {p.get('site') or p['site_key']} could take it"
    else:
        said = "the re-run never reached what the fix changes"
    compiled = run.get("compiled") or []
    if compiled:
        said += f" (the script compiled {', '.join(compiled[:4])})"
    return "not applied: " + said


def outputs_judged(
    base: dict, run: dict, reference: dict | None, eager
) -> tuple[bool | None, str, dict | None]:
    """(equal, what was compared, the largest difference): the re-run's compiled outputs against
    the first run's, and, where those differ, against the script run eagerly (the first compiled
    run may be the one that differs from eager). A difference within LOOSE times the dtype's
    tolerance is numerical drift (equal, the drift said); beyond it, results changed."""
    ref = reference or base
    equal, diff, n = measure.first_difference(ref["outputs"], run["outputs"])
    if equal is None:
        return (
            None,
            "no outputs recorded"
            if not ref["outputs"] or not run["outputs"]
            else "no compiled call in common",
            None,
        )
    how = (
        " (compared with the same fix run eagerly: the first run never called the compiled object)"
        if reference
        else ""
    )
    if base.get("outputs_from") == "eager" and not reference:
        how = " (compared with the script run eagerly: the session of `fxlens run` kept no outputs)"
    if equal:
        return True, f"{n} compiled call(s) equal within the dtype's tolerance{how}", None
    if reference is None and base.get("outputs_from") != "eager" and eager is not None:
        eager_outputs = eager()
        e_equal, e_diff, _ = measure.first_difference(eager_outputs, run["outputs"])
        if e_equal:
            return (
                True,
                (
                    "equal to the script run eagerly within the dtype's tolerance; the first (compiled) run is "
                    f"the one that differs from eager ({measure.describe_difference(diff)})"
                ),
                None,
            )
        if e_diff is not None:
            diff, how = e_diff, " (against the script run eagerly)"
    said = measure.describe_difference(diff) + how
    if diff.get("within_loose"):
        return True, f"numerical drift only: {said}", diff
    return False, f"differs beyond the dtype's tolerance: {said}", diff
