"""`fxlens fix SCRIPT [ARGS...]`: every fix the findings name, tried in a re-run and measured.

The script runs once as asked (or `--session` names a run already made: of `fxlens run`, or of
`fxlens doctor`, whose findings' fixes are then gathered too), then once per fix fxlens
can apply without editing the user's files (a torch switch, or a change through its torch.compile
hook; fxlens.fix.child), each re-run with only that fix. Per fix: graphs, graph breaks, recompiles
and cold compile seconds before -> after (every run gets its own empty inductor cache), whether the
compiled calls returned the same values as in the first run, and a verdict. The fixes that helped
are then tried together once. Code fixes are stated as patches, not tried.

Each result is appended to the session (a `fix` event) as soon as it is measured: Ctrl-C keeps
every fix already measured, and `fxlens report` shows them.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from fxlens import config
from fxlens.capture.backends import check_spec
from fxlens.capture.command import (
    add_timeout_argument,
    check_script,
    shell_status,
)
from fxlens.errors import FxlensError
from fxlens.fix import measure
from fxlens.fix.findings import gather, parse_try
from fxlens.fix.render import render_text
from fxlens.fix.runs import Progress, error_line, one_run, read_run
from fxlens.report.fixes import label, target
from fxlens.trace.session import Session, append_event, new_session_dir

# --speed: seconds of doctor's interleaved timing per compiled function, per run
SPEED_BUDGET_S = 3.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--backend", metavar="NAME", help="backend of every run (default: the script's own)")
    parser.add_argument(
        "--session",
        metavar="DIR",
        help="a session of `fxlens run` (or of an earlier `fxlens fix`) to use as the first run, "
        "instead of running the script first; a new or empty DIR: where this session goes",
    )
    parser.add_argument(
        "--speed",
        action="store_true",
        help="also measure each run's steady-state speedup over eager, with doctor's interval",
    )
    parser.add_argument(
        "--try",
        dest="tries",
        metavar="FIX",
        action="append",
        default=[],
        help="also try FIX: regional:CLASS (compile each CLASS instance instead of the whole model), "
        "dynamic, or config:NAME=VALUE (a torch._dynamo.config switch); repeatable",
    )
    parser.add_argument(
        "--json", metavar="FILE", help="also write the result as JSON to FILE ('-' for stdout)"
    )
    add_timeout_argument(parser)


def _base(script, args, sdir: Path, given: str | None, **opts) -> dict:
    """The first run: made here, or read from the session --session names."""
    if given is None:
        base = one_run(script, args, sdir, [], **opts)
        if not (base["measures"] or {}).get("graphs") and not base["recorder"]["objects"]:
            if base["exit_code"]:
                err = FxlensError(f"{script} {base['ended']} before compiling anything (session: {sdir})")
                err.exit_code = shell_status(base["exit_code"])
                raise err
            raise FxlensError(f"{script} compiles nothing: it never calls torch.compile (session: {sdir})")
        return base
    session = Session.open(sdir)
    if not session.logs:
        raise FxlensError(f"{sdir}: holds no trace of a run (make one with `fxlens run`)")
    info = session.info
    return read_run(session, sdir, info.get("exit_code"), info.get("seconds"))


def _result(entry: dict, base: dict, run: dict | None, reference: dict | None) -> dict:
    """One fix's JSON entry from its re-run (None for a code fix: not tried)."""
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
        "verdict": "not tried",
        "why": "a change to your code: fxlens states it as a patch and does not apply it",
        "patch": entry.get("patch"),
        "run": None,
        "speed": None,
    }
    if run is None:
        return out
    applied = bool(run["applied"].get("0"))
    ref = reference or base
    equal, said = measure.compare_outputs(ref["outputs"], run["outputs"])
    if reference is not None:
        said += " (compared with the same fix run eagerly: the first run never called the compiled object)"
    elif base.get("outputs_from") == "eager":
        said += " (compared with the script run eagerly: the session of `fxlens run` kept no outputs)"
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
        run=run["dir"],
        seconds=run["seconds"],
        speed={"before": base["speed"], "after": run["speed"]} if run["speed"] or base["speed"] else None,
    )
    if not applied:
        out.update(verdict="no effect", why="not applied: the re-run never reached what the fix changes")
        return out
    out["verdict"], out["why"] = measure.verdict(
        target(entry["action"]), base["measures"], run["measures"] or {}, equal, failed
    )
    return out


def fix_script(
    script: str,
    args: list[str] | tuple = (),
    *,
    backend: str | None = None,
    session_dir: str | os.PathLike | None = None,
    speed: bool = False,
    tries: list[str] | tuple = (),
    timeout: float | None = None,
    results: list | None = None,
) -> dict:
    """Run SCRIPT, then re-run it once per applicable fix, and once with the fixes that helped.

    Args:
        script, args: the Python script (run as `__main__` in child processes) and its arguments.
        backend: backend of every run (None: the script's own).
        session_dir: a run's session to use as the first run; a new or empty one to write to.
        speed: measure each run's steady-state speedup (doctor's interleaved timing).
        tries: extra fixes (`regional:CLASS`, `dynamic`, `config:NAME=VALUE`).
        timeout: seconds one run may take.
        results: the per-fix results are appended to it as they come (kept on Ctrl-C).

    Returns:
        `{script, session, base, fixes: [...], together, load}` (docs/schemas/fix.schema.json).
    """
    check_script(script)
    if backend:
        check_spec(backend)
    extra = [parse_try(t) for t in tries]
    opts = {"backend": backend, "timeout": timeout, "speed": SPEED_BUDGET_S if speed else 0.0}
    sdir = Path(session_dir) if session_dir else new_session_dir(config.load().sessions_dir, script)
    results = [] if results is None else results
    progress = Progress(0)  # how many runs is known once the first run's findings are
    base, n = _first_run(script, args, sdir, session_dir, progress, opts)
    entries = _entries(sdir, script, base, extra)
    tried = [e for e in entries if e["how"] != "code"]
    progress.total = (
        n
        + len(tried)
        + (1 if base["outputs"] is None and tried else 0)
        + (1 if len(tried) > 1 else 0)  # the fixes that helped, together (when two or more do)
    )
    if base["outputs"] is None and tried:  # a `fxlens run` session: the eager run is the reference
        n += 1
        base["outputs_from"] = "eager"
        base["outputs"] = progress.run(
            n,
            "the script run eagerly (reference outputs)",
            lambda: one_run(script, args, sdir / "reference", [], stance="eager", **opts),
        )["outputs"]
    _each_fix(script, args, sdir, base, entries, results, progress, n, opts)
    together = _together(script, args, sdir, base, entries, results, progress, opts)
    base_out = {k: base[k] for k in ("measures", "exit_code", "seconds", "speed")}
    out = {"script": os.path.abspath(script), "argv": list(args), "session": str(sdir), "base": base_out}
    out.update(fixes=results, together=together, load=_load())
    append_event(sdir, "fix_summary", {k: v for k, v in out.items() if k != "fixes"})
    return out


def _entries(sdir: Path, script: str, base: dict, extra: list[dict]) -> list[dict]:
    """The fixes to try or state: from the first run's report and recorder, `--try`, and, in a
    session of `fxlens doctor`, its findings' own (doctor-only ones among them)."""
    session = Session.open(sdir)
    _, report = measure.measures(session)
    doctor = next((e for e in reversed(session.events) if e.get("event") == "doctor"), {})
    return gather(report, script, base["recorder"], extra, doctor.get("findings") or [])


def _first_run(script, args, sdir: Path, session_dir, progress, opts) -> tuple[dict, int]:
    """(the first run, runs made so far): made now, or read from the session --session names
    (a new or empty DIR is where the first run goes)."""
    if session_dir is not None and (sdir / "session.json").exists():
        return _base(script, args, sdir, str(session_dir), **opts), 0
    return progress.run(1, "the first run, as asked", lambda: _base(script, args, sdir, None, **opts)), 1


def _each_fix(script, args, sdir: Path, base: dict, entries, results: list, progress, n: int, opts) -> None:
    """One re-run per fix fxlens can apply, each result appended to RESULTS and to the session as
    soon as it is measured (so Ctrl-C keeps it); code fixes are recorded as not tried."""
    for i, e in enumerate(entries):
        run = reference = None
        if e["how"] != "code":
            n += 1
            run_dir = sdir / f"fix-{i + 1}"
            run = progress.run(
                n, label(e["action"]), lambda e=e, d=run_dir: one_run(script, args, d, [e["action"]], **opts)
            )
            if not measure.calls(base["outputs"]) and measure.calls(run["outputs"]):
                # the first run never called the compiled object: the same fix run eagerly is the reference
                ref_dir = sdir / f"fix-{i + 1}-eager"
                reference = progress.run(
                    n,
                    f"{label(e['action'])}, run eagerly (the reference outputs)",
                    lambda e=e, d=ref_dir: one_run(script, args, d, [e["action"]], stance="eager", **opts),
                )
        res = _result(e, base, run, reference)
        results.append(res)
        append_event(sdir, "fix", res)


def _together(script, args, sdir, base, entries, results, progress, opts) -> dict | None:
    """The fixes that helped, tried together once (None when fewer than two helped)."""
    helped = [i for i, r in enumerate(results) if r["verdict"] == "helps"]
    if len(helped) < 2:
        return None
    actions = [entries[i]["action"] for i in helped]
    run = progress.run(
        progress.total,
        "the fixes that helped, together",
        lambda: one_run(script, args, sdir / "fix-together", actions, **opts),
    )
    equal, said = measure.compare_outputs(base["outputs"], run["outputs"])
    failed = f"the re-run {run['ended']}" if run["exit_code"] and not base["exit_code"] else ""
    verdicts = [
        measure.verdict(target(a), base["measures"], run["measures"] or {}, equal, failed)[0] for a in actions
    ]
    verdict = next(
        (v for v in ("changes results", "hurts") if v in verdicts),
        "helps" if "helps" in verdicts else "no effect",
    )
    res = {
        "fixes": [results[i]["fix"] for i in helped],
        "before": base["measures"],
        "after": run["measures"] or None,
        "outputs_equal": equal,
        "outputs": said,
        "verdict": verdict,
        "run": run["dir"],
    }
    append_event(sdir, "fix_together", res)
    return res


def _load() -> dict:
    from fxlens.doctor.interval import cores, load_average

    return {"average": load_average(), "cores": cores()}


def main(args: argparse.Namespace) -> int:
    from fxlens.report.command import check_writable, write_json
    from fxlens.report.outputs import check_folder_writable

    check_writable(args.json)
    check_script(args.script)
    check_folder_writable(args.session, "--session")  # read as the first run, or written: written to
    results: list = []
    try:
        out = fix_script(
            args.script,
            args.script_args,
            backend=args.backend,
            session_dir=args.session,
            speed=args.speed,
            tries=args.tries,
            timeout=config.run_timeout(args.timeout),
            results=results,
        )
    except KeyboardInterrupt:  # what was measured is in the session already; show it too
        if results:
            sys.stdout.write(render_text({"fixes": results, "together": None, "interrupted": True}))
        raise
    if args.json:
        write_json(out, args.json)
    if args.json != "-":
        sys.stdout.write(render_text(out))
    return 0
