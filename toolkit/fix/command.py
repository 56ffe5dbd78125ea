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
import subprocess
import sys
from pathlib import Path

from fxlens import config
from fxlens.capture.backends import check_spec
from fxlens.capture.command import (
    add_timeout_argument,
    check_script,
    shell_status,
)
from fxlens.capture.stdin import RECORD
from fxlens.errors import FxlensError
from fxlens.fix import measure
from fxlens.fix.findings import TRIES, code_files_of, gather, parse_try, replacement
from fxlens.fix.render import render_text
from fxlens.fix.results import fix_result, outputs_judged
from fxlens.fix.runs import Launch, Progress, error_line, one_run, read_run
from fxlens.report.fix_result import FixResult
from fxlens.report.fixes import label, target
from fxlens.report.measured import record_fix_session
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
        help=f"also try FIX, one of {', '.join(syntax for syntax, _ in TRIES.values())} (each kind in "
        "docs/reference/fix-kinds.md); repeatable",
    )
    parser.add_argument(
        "--json", metavar="FILE", help="also write the result as JSON to FILE ('-' for stdout)"
    )
    parser.add_argument(
        "--nproc",
        metavar="N",
        type=int,
        default=0,
        help="launch every run through torchrun with N local processes, as `fxlens run --nproc` "
        "(default: the session's own launcher with --session, else a plain process)",
    )
    add_timeout_argument(parser)


def _base(script, args, sdir: Path, given: str | None, **opts) -> dict:
    """The first run: made here, or read from the session --session names."""
    if given is None:
        base = one_run(script, args, sdir, [], **opts)
        opts["launch"].replay(sdir)
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
    nproc: int = 0,
) -> dict:
    """Run SCRIPT, then re-run it once per applicable fix, and once with the fixes that helped.

    Every run starts the script as the first run did (fxlens.fix.runs.Launch): the same launcher
    (torchrun with N processes), working directory, environment switches and standard input.

    Args:
        script, args: the Python script (run as `__main__` in child processes) and its arguments.
        backend: backend of every run (None: the script's own).
        session_dir: a run's session to use as the first run; a new or empty one to write to.
        speed: measure each run's steady-state speedup (doctor's interleaved timing).
        tries: extra fixes (`regional:CLASS`, `dynamic`, `config:NAME=VALUE`).
        timeout: seconds one run may take.
        results: the per-fix results are appended to it as they come (kept on Ctrl-C).
        nproc: torchrun's process count (0: the session's own, else one plain process).

    Returns:
        `{script, session, base, fixes: [...], together, load, said}` (docs/schemas/fix.schema.json).
    """
    check_script(script)
    if backend:
        check_spec(backend)
    extra = [parse_try(t) for t in tries]  # a switch the running torch lacks: refused before any run
    sdir = Path(session_dir) if session_dir else new_session_dir(config.load().sessions_dir, script)
    launch = _launch(sdir, nproc)
    opts = {"backend": backend, "timeout": timeout, "speed": SPEED_BUDGET_S * speed, "launch": launch}
    results = [] if results is None else results
    progress = Progress(0)  # how many runs is known once the first run's findings are
    base, n = _first_run(script, args, sdir, session_dir, progress, opts)
    said = _before_reruns(script, sdir, base, launch)
    for line in said:
        print(f"fxlens fix: {line}", file=sys.stderr, flush=True)
    entries = _entries(sdir, script, base, extra)
    tried = [e for e in entries if e["how"] != "code"]
    # + the eager reference of a `fxlens run` session, + the fixes that helped, together
    progress.total = n + len(tried) + (base["outputs"] is None and bool(tried)) + (len(tried) > 1)
    if base["outputs"] is None and tried:  # a `fxlens run` session: the eager run is the reference
        n += 1
        _reference_outputs(script, args, sdir, base, progress, n, opts)
    eager = _EagerReference(script, args, sdir, progress, opts)
    _each_fix(script, args, sdir, base, entries, results, progress, n, opts, eager)
    together = _together(script, args, sdir, base, entries, results, progress, opts, eager)
    base_out = {k: base[k] for k in ("measures", "exit_code", "seconds", "speed")}
    out = FixResult(
        os.path.abspath(script), list(args), str(sdir), base_out, results, together, _load(), said
    )
    append_event(sdir, "fix_summary", out.summary())
    return out.to_json()


def _reference_outputs(script, args, sdir: Path, base: dict, progress, n: int, opts) -> None:
    """A session of `fxlens run` kept no outputs: the script run eagerly gives the reference."""
    base["outputs_from"] = "eager"
    base["outputs"] = progress.run(
        n,
        "the script run eagerly (reference outputs)",
        lambda: one_run(script, args, sdir / "reference", [], stance="eager", **opts),
    )["outputs"]


class _EagerReference:
    """The script run eagerly, made once and only when a re-run's outputs differ from the first
    run's: the verdict "changes results" is judged against eager, not against a compiled run."""

    def __init__(self, script, args, sdir: Path, progress, opts):
        self.script, self.args, self.sdir, self.progress, self.opts = script, args, sdir, progress, opts
        self.outputs = self.made = None

    def __call__(self):
        if not self.made:
            self.made = True
            self.outputs = self.progress.run(
                self.progress.total,
                "the script run eagerly (a re-run's outputs differ from the first run's)",
                lambda: one_run(self.script, self.args, self.sdir / "eager", [], stance="eager", **self.opts),
            )["outputs"]
        return self.outputs


def _launch(sdir: Path, nproc: int) -> Launch:
    """How every run starts the script: as the session's first run did (its launcher, folder and
    switches), or from this command's own (cwd, --nproc); stdin is recorded by the first run."""
    launch = Launch(nproc=nproc, stdin=RECORD)
    if not (sdir / "session.json").exists():
        return launch
    info = Session.open(sdir).info
    launch.nproc = nproc or int(info.get("nproc") or 0)
    launch.cwd = info.get("cwd") if info.get("cwd") and os.path.isdir(info["cwd"]) else None
    launch.env = {k: v for k, v in (info.get("env") or {}).items() if k not in (config.ENV_BACKEND_OVERRIDE,)}
    launch.replay(sdir)
    return launch


def _before_reruns(script: str, sdir: Path, base: dict, launch: Launch) -> list[str]:
    """What the re-runs cannot reproduce, or what the first run says that fix cannot answer, said
    before any re-run (never after, as a verdict)."""
    said = []
    if base.get("exit_code"):
        why = error_line(sdir / "output.log")
        said.append(
            f"the first run {base.get('ended') or 'failed'}"
            + (f" ({why})" if why else "")
            + f": fix measures graphs, breaks and recompiles, but a failure is bisect's to find: "
            f"`fxlens bisect {script}`"
        )
    if launch.stdin == subprocess.DEVNULL and base.get("stdin_read"):
        said.append(
            "the first run read its input from a terminal: the re-runs read an empty input "
            f"(pipe it in to replay it: `fxlens fix {script} < input.txt`)"
        )
    ranks = len({r.rank for r in Session.open(sdir).ranks}) if (sdir / "session.json").exists() else 0
    if ranks > 1 and not launch.nproc:
        said.append(
            f"the first run's trace has {ranks} ranks but no launcher was recorded: the re-runs start "
            f"one process (pass --nproc {ranks} to launch them through torchrun)"
        )
    elif launch.nproc:
        said.append(
            f"every re-run is launched through torchrun with {launch.nproc} processes, as the first run"
        )
    return said


def _entries(sdir: Path, script: str, base: dict, extra: list[dict]) -> list[dict]:
    """The fixes to try or state: from the first run's report and recorder, `--try`, and, in a
    session of `fxlens doctor`, its findings' own (doctor-only ones among them)."""
    session = Session.open(sdir)
    _, report = measure.measures(session)
    doctor = next((e for e in reversed(session.events) if e.get("event") == "doctor"), {})
    recorder = {**base["recorder"], "loaders": base.get("loaders") or []}
    return gather(
        report, script, recorder, extra, doctor.get("findings") or [], code_files=code_files_of(session)
    )


def _first_run(script, args, sdir: Path, session_dir, progress, opts) -> tuple[dict, int]:
    """(the first run, runs made so far): made now, or read from the session --session names
    (a new or empty DIR is where the first run goes)."""
    if session_dir is not None and (sdir / "session.json").exists():
        return _base(script, args, sdir, str(session_dir), **opts), 0
    return progress.run(1, "the first run, as asked", lambda: _base(script, args, sdir, None, **opts)), 1


def _each_fix(
    script, args, sdir: Path, base: dict, entries, results: list, progress, n: int, opts, eager
) -> None:
    """One re-run per fix fxlens can apply, each result appended to RESULTS and to the session as
    soon as it is measured (so Ctrl-C keeps it); code fixes are recorded as not tried. A fix torch
    refuses (mark_dynamic: ConstraintViolationError) is followed by what torch suggests instead."""
    queue = list(entries)
    i = 0
    while i < len(queue):
        e = queue[i]
        i += 1
        run = reference = None
        if e["how"] != "code":
            n += 1
            run_dir = sdir / f"fix-{i}"
            run = progress.run(
                n, label(e["action"]), lambda e=e, d=run_dir: one_run(script, args, d, [e["action"]], **opts)
            )
            if not measure.calls(base["outputs"]) and measure.calls(run["outputs"]):
                # the first run never called the compiled object: the same fix run eagerly is the reference
                reference = progress.run(
                    n,
                    f"{label(e['action'])}, run eagerly (the reference outputs)",
                    lambda e=e, d=sdir / f"fix-{i}-eager": one_run(
                        script, args, d, [e["action"]], stance="eager", **opts
                    ),
                )
        res = fix_result(e, base, run, reference, eager)
        results.append(res)
        append_event(sdir, "fix", res)
        if res["verdict"] != "not tried":  # a report of another session of the script finds it so
            record_fix_session(sdir, script)
        instead = replacement(e, res)
        if instead is not None:
            queue.insert(i, instead)
            progress.total += 1


def _together(script, args, sdir, base, entries, results, progress, opts, eager) -> dict | None:
    """The fixes that helped, tried together once (None when fewer than two helped)."""
    helped = [r for r in results if r["verdict"] == "helps"]
    if len(helped) < 2:
        return None
    actions = [{"kind": r["kind"], "params": r["params"]} for r in helped]
    run = progress.run(
        progress.total,
        "the fixes that helped, together",
        lambda: one_run(script, args, sdir / "fix-together", actions, **opts),
    )
    equal, said, _ = outputs_judged(base, run, None, eager)
    failed = f"the re-run {run['ended']}" if run["exit_code"] and not base["exit_code"] else ""
    # judged on every measure one of them targets: one fix's gain may be another's loss
    targets = list(dict.fromkeys(t for a in actions for t in target(a)))
    verdict, why = measure.verdict(targets, base["measures"], run["measures"] or {}, equal, failed)
    res = {
        "fixes": [r["fix"] for r in helped],
        "before": base["measures"],
        "after": run["measures"] or None,
        "outputs_equal": equal,
        "outputs": said,
        "verdict": verdict,
        "why": why,
        "run": run["dir"],
    }
    append_event(sdir, "fix_together", res)
    return res


def _load() -> dict:
    from fxlens.probe.interval import cores, load_average

    return {"average": load_average(), "cores": cores()}


def main(args: argparse.Namespace) -> int:
    from fxlens.report.outputs import check_folder_writable, check_writable, write_json

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
            nproc=args.nproc,
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
