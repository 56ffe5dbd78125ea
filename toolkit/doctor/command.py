"""`fxlens doctor SCRIPT [ARGS...]`: is torch.compile helping this script, and what should change?

The script runs in child processes, side by side: once with every torch.compile forced eager (the
baseline) and once compiled (its own backend, or --backend), --rounds times each, alternating.
fxlens.probe.hook times every call of every compiled object in both; the compiled run's session
(TORCH_TRACE and events) also gives graph breaks, recompile causes and limit hits. The result is a
table of compiled functions (eager vs compiled per call, compile time, break-even) and a ranked
list of findings, each saying what to change at which line of the user's code.

Public API (used by `fxlens demo`): `doctor_script(script, args, backend=...) -> dict`; its text is
`fxlens.report.doctor_text.render_text(result) -> str`.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

from fxlens import config
from fxlens.capture.backends import check_spec
from fxlens.capture.command import (
    add_timeout_argument,
    check_script,
    refused_message,
    run_captured,
    shell_status,
)
from fxlens.capture.runner import REFUSED
from fxlens.doctor.findings import findings as rank_findings
from fxlens.doctor.memcauses import memory_breakdown, memory_findings
from fxlens.doctor.warm_start import cold_vs_warm
from fxlens.errors import FxlensError
from fxlens.live.progress import Progress
from fxlens.probe.hook import OUTPUT_FILE
from fxlens.probe.interval import cores, load_average
from fxlens.probe.replaytrace import replay_compiles, split
from fxlens.probe.stats import RunStats, function_rows, peak_memory, probe_runs, wall_times
from fxlens.report.blocks import block_findings
from fxlens.report.build import build_report
from fxlens.report.doctor_result import DoctorResult
from fxlens.report.doctor_text import render_text, summary
from fxlens.report.exits import how_it_ended
from fxlens.trace.session import Session, append_event, new_session_dir, write_info
from fxlens.trace.userframes import innermost_user_frame, parse_traceback

# the most seconds of interleaved timing per compiled function: sampling stops as soon as the
# interval gives a verdict (a sub-millisecond function: a second or two; a real model on a quiet
# machine: 5-20 s), so this is what a busy machine or a slow call may take before "inconclusive"
DEFAULT_BUDGET_S = 60.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--backend", metavar="NAME", help="backend for the compiled run (default: the script's own)"
    )
    parser.add_argument(
        "--json", metavar="FILE", help="also write the result as JSON to FILE ('-' for stdout)"
    )
    parser.add_argument(
        "--rounds",
        metavar="N",
        type=int,
        default=1,
        help="run eager and compiled N times each, alternating, and report medians (default 1)",
    )
    parser.add_argument(
        "--budget",
        metavar="SECONDS",
        type=float,
        default=DEFAULT_BUDGET_S,
        help="the most seconds per compiled function of eager and compiled calls interleaved after the "
        "script ends; sampling stops earlier once the speedup's interval excludes 1 and is narrow "
        f"(default {DEFAULT_BUDGET_S:g}; 0: only the script's own calls)",
    )
    parser.add_argument(
        "--nproc", metavar="N", type=int, default=0, help="launch N local processes through torchrun"
    )
    parser.add_argument(
        "--warm",
        action="store_true",
        help="also measure cold vs warm start: two more compiled runs sharing one private, initially "
        "empty cache folder (TORCHINDUCTOR_CACHE_DIR, TRITON_CACHE_DIR; yours is neither read nor "
        "written), and a third on an empty folder with the first one's portable cache bundle "
        "loaded; compile seconds, every cache hit, and what the warm start still spends by part",
    )
    add_timeout_argument(parser)


# the line of a traceback that names the exception: `RuntimeError: ...`, `torch._dynamo.exc.X: ...`
PROBE_HOOK = "fxlens.probe.hook:runner_hook"  # what the runner child calls first (FXLENS_RUNNER_HOOK)
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Failed|Exit|Interrupt)\b.*")


def _failure(run_dir: Path) -> tuple[str, str | None, int | None]:
    """(the exception line, or the last output line; file and line of the innermost user frame)."""
    try:
        text = (run_dir / OUTPUT_FILE).read_text(errors="replace")
    except OSError:
        return "", None, None
    lines = [ln.strip() for ln in text.split("\n") if ln.strip()]
    why = next((ln for ln in reversed(lines) if _EXCEPTION_LINE.match(ln)), lines[-1] if lines else "")
    frame = innermost_user_frame(parse_traceback(text))
    return why[:200], (frame.file if frame else None), (frame.line if frame else None)


def _last_error_line(run_dir: Path) -> str:
    return _failure(run_dir)[0]


def _run(script, args, run_dir: Path, mode: str, backend, nproc, timeout, budget: float = 0.0):
    run_dir.mkdir(parents=True, exist_ok=True)
    # the script's own output goes to OUTPUT_FILE (the probe redirects it in the child); what is
    # printed before that (torchrun's banner) is captured here and dropped
    return run_captured(
        script,
        list(args),
        backend=backend if mode == "compiled" else None,
        session_dir=str(run_dir),
        nproc=nproc,
        env={
            config.ENV_DOCTOR_PROBE: mode,
            config.ENV_RUNNER_HOOK: PROBE_HOOK,
            # only the compiled child re-times: it holds both the original objects and the compiled ones
            config.ENV_DOCTOR_BUDGET: str(budget if mode == "compiled" else 0),
        },
        timeout=timeout,
        stdout=os.devnull,  # the probe writes the script's output to output.log itself
        stderr=os.devnull,
    )


@dataclass
class _Rounds:
    """What the eager and compiled runs gave: the probe's stats per round, and each exit status."""

    eager: list[list[RunStats]] = field(default_factory=list)
    compiled: list[list[RunStats]] = field(default_factory=list)
    codes: dict[str, list] = field(default_factory=lambda: {"eager": [], "compiled": []})
    loads: list = field(default_factory=list)  # 1-minute load average before each run
    replays: list = field(default_factory=list)  # per compiled run: what doctor's own replay compiled


def _run_dir(sdir: Path, mode: str, k: int) -> Path:
    # round 1's compiled run is the doctor session itself: `fxlens report`/tui show its trace
    return sdir if (mode, k) == ("compiled", 1) else sdir / f"{mode}-{k}"


def _run_rounds(
    script, args, sdir: Path, backend, rounds: int, nproc: int, timeout, budget: float
) -> _Rounds:
    """Eager, then compiled, `rounds` times (alternating, so drift hits both alike)."""
    done = _Rounds()
    tick = Progress("doctor", "run", total=2 * rounds)  # one line on a terminal (fxlens.live.progress)
    for k in range(1, rounds + 1):
        for mode in ("eager", "compiled"):
            tick.begin(f"{mode}, round {k}")  # drawn, its clock moving, while the run goes on
            run_dir = _run_dir(sdir, mode, k)
            done.loads.append(load_average())
            result = _run(script, args, run_dir, mode, backend, nproc, timeout, budget)
            if mode == "compiled":
                done.replays.append(_split_replay(run_dir))
            session = Session.open(run_dir)
            if result.exit_code == REFUSED and (msg := refused_message(session)):
                raise FxlensError(msg)
            done.codes[mode].append(result.exit_code)
            (done.eager if mode == "eager" else done.compiled).append(probe_runs(session))
            if (mode, k, result.exit_code) == ("eager", 1, 0) and not _called_compile(session):
                # the same script compiled would compile nothing either: say so now, not a run later
                raise _compiles_nothing(script, sdir)
            tick.step(f"{mode}, round {k}")
    tick.close()
    return done


def _split_replay(run_dir: Path) -> dict:
    """Move the trace records of doctor's replay out of the run's trace (fxlens.probe.replaytrace):
    what it compiled is doctor's doing, never one of the script's findings."""
    try:
        events = Session.open(run_dir).events
    except FxlensError:
        return {"trace": None, "compiles": 0, "compile_ids": []}
    probes = [e for e in events if e.get("event") == "doctor_probe"]
    moved = [split(run_dir, e.get("trace_boundary")) for e in probes]
    trace = next((m["trace"] for m in moved if m["trace"]), None)
    return {
        "trace": trace,
        "compiles": sum(int(e.get("replay_compiles") or 0) for e in probes),
        "compile_ids": replay_compiles(trace),
    }


def _called_compile(session: Session) -> bool:
    return any(e.get("event") == "compile_call" for e in session.events)


def _nothing_timed(script: str, sdir: Path, session: Session, code: int, timeout) -> FxlensError:
    """The one-line error when the compiled run timed no call: why, as far as the session tells."""
    called = _called_compile(session)
    if code:
        why = _last_error_line(sdir)
        # a crash or hang after torch.compile was called: in a compile or a compiled graph
        when = "after calling torch.compile (in the backend?)" if called else "before compiling anything"
        err = FxlensError(
            f"{script} {how_it_ended(code, timeout)} {when}"
            + (f": {why}" if why else "")
            + f" (session: {sdir})"
        )
        err.exit_code = shell_status(code)
        return err
    if called:
        return FxlensError(
            f"{script} called torch.compile but its process ended without reporting timings "
            f"(os._exit or killed?) (session: {sdir})"
        )
    return _compiles_nothing(script, sdir)


def _compiles_nothing(script: str, sdir: Path) -> FxlensError:
    return FxlensError(f"{script} compiles nothing: it never calls torch.compile (session: {sdir})")


def _compiled_failure(sdir: Path, codes: dict, timeout) -> tuple[str | None, tuple | None]:
    """When only the compiled run failed: what it said, and where in the user's code (else None)."""
    if not (codes["compiled"][0] and not codes["eager"][0]):
        return None, None
    why, file, line = _failure(sdir)
    failed_at = (file, line) if file else None
    if codes["compiled"][0] == 124 and timeout:
        why = f"timed out after {timeout:g} s"
    failed = f"the compiled run exited with status {codes['compiled'][0]} but the eager run succeeded" + (
        f": {why}" if why else ""
    )
    return failed, failed_at


def _load(runs: _Rounds, rows: list[dict]) -> dict:
    """The machine's load over doctor's runs: the highest 1-minute load average seen (before each
    run, and around each interleaved measurement), against the cores this process may use."""
    seen = [*runs.loads, load_average()]
    for row in rows:
        seen += list(((row.get("timing") or {}).get("load") or {}).values())[:2]
    seen = [x for x in seen if isinstance(x, (int, float))]
    # the tasks runnable beside doctor's own while it timed: the load of that moment, which the
    # 1-minute average only catches up with a minute later
    others = [
        t["load"]["others_runnable"]
        for r in rows
        if "others_runnable" in ((t := r.get("timing") or {}).get("load") or {})
    ]
    return {
        "average": max(seen) if seen else None,
        "cores": cores(),
        "machine_cores": os.cpu_count(),
        "samples": seen,
        **({"others_runnable": max(others)} if others else {}),
    }


def _diagnose(
    script, args, sdir: Path, session: Session, runs: _Rounds, *, backend, rounds, nproc, timeout, budget
):
    """The result dict from the rounds' timings and the compiled session's report."""
    rows = function_rows(runs.eager, runs.compiled)
    _add_trace_compile_times(rows, session)
    report = build_report(session, with_guards=False)
    failed, failed_at = _compiled_failure(sdir, runs.codes, timeout)
    memory = peak_memory(runs.eager, runs.compiled)
    memory.update(memory_breakdown(_open_or_none(_run_dir(sdir, "eager", 1)), session))
    load = _load(runs, rows)
    found = rank_findings(
        rows, report, cuda=memory["kind"] == "cuda_allocator", failed=failed, failed_at=failed_at, load=load
    )
    found += block_findings(report)  # repeated blocks: regional compilation (fxlens.report.blocks)
    found += memory_findings(memory)  # memory by cause (fxlens.doctor.memcauses)
    wall = wall_times(runs.eager, runs.compiled)
    result = {
        "script": os.path.abspath(script),
        "argv": list(args),
        "backend": backend,
        "backends_used": sorted({str(r["options"].get("backend")) for r in rows}),
        "rounds": rounds,
        "budget_s": budget,
        "nproc": nproc,
        "load": load,
        "session": str(sdir),
        "functions": rows,
        "peak_memory": memory,
        "wall": {
            **wall,
            "eager_process_s": _median_s(sdir, "eager", rounds),
            "compiled_process_s": _median_s(sdir, "compiled", rounds),
        },
        "ranks": sorted({r.rank for r in runs.compiled[0] if r.rank is not None}),
        "exit_codes": runs.codes,
        "graph_breaks": sum(b["count"] for b in report["graph_breaks"]),
        "recompiles": len(report["recompiles"]),
        "findings": found,
        # what doctor's own re-timing compiled: kept out of the findings and the session's trace
        "replay": runs.replays[0] if runs.replays else None,
    }
    result["summary"] = summary(script, rows, wall, found, load)
    return result


def doctor_script(
    script: str,
    args: list[str] | tuple = (),
    *,
    backend: str | None = None,
    rounds: int = 1,
    nproc: int = 0,
    timeout: float | None = None,
    session_dir: str | os.PathLike | None = None,
    budget: float = DEFAULT_BUDGET_S,
    warm: bool = False,
) -> dict:
    """Run SCRIPT eager and compiled, side by side, and diagnose what torch.compile does for it.

    Args:
        script: the Python script, run as `__main__` in child processes.
        args: the script's own arguments.
        backend: backend for the compiled run (None: whatever the script's torch.compile asks for).
        rounds: eager and compiled runs each; numbers are medians over rounds.
        nproc: launch that many local processes through torchrun (0: a plain process).
        timeout: seconds each run may take.
        session_dir: where the doctor session goes (default: a new one under the sessions dir).
        budget: seconds per compiled function of interleaved eager/compiled timing after the
            script ends (0: per-call times of the script's own calls only).
        warm: also run it compiled twice more with one private cache folder, cold then warm, and
            once from the cold run's portable cache bundle (fxlens.doctor.warm_start): the result's `warm`.

    Returns:
        The JSON-ready result (the JSON contract, docs/reference/json.md: `functions`, `peak_memory`, `findings`, plus
        `summary`, `wall`, `session` and more). It is also appended to the session as a `doctor`
        event.

    Raises:
        FxlensError: missing script, refused backend, a script that fails before compiling, or a
            script that compiles nothing (one line each).
    """
    _check_options(script, backend, rounds, budget)
    sdir = Path(session_dir) if session_dir else new_session_dir(config.load().sessions_dir, script)
    sdir.mkdir(parents=True, exist_ok=True)
    runs = _run_rounds(script, args, sdir, backend, rounds, nproc, timeout, budget)
    main_session = Session.open(sdir)
    if not any(run.records for stats in runs.compiled for run in stats):
        raise _nothing_timed(script, sdir, main_session, runs.codes["compiled"][0], timeout)
    options = {"backend": backend, "rounds": rounds, "nproc": nproc, "timeout": timeout, "budget": budget}
    result = _diagnose(script, args, sdir, main_session, runs, **options)
    if warm:
        result["warm"] = cold_vs_warm(script, args, sdir, backend=backend, timeout=timeout)
    # the one result object: a key the contract does not declare is a TypeError here, not a surprise
    result = DoctorResult(**result).to_json()
    append_event(sdir, "doctor", result)
    info = dict(main_session.info)
    info.update(command="doctor", doctor_rounds=rounds)
    write_info(sdir, info)
    return result


def _check_options(script: str, backend: str | None, rounds: int, budget: float) -> None:
    """Bad input, refused before any session directory exists (one line each)."""
    check_script(script)
    if rounds < 1:
        raise FxlensError(f"--rounds must be at least 1, not {rounds}")
    if budget < 0:
        raise FxlensError(f"--budget must be 0 or more seconds, not {budget:g}")
    if backend:
        check_spec(backend)


def _add_trace_compile_times(rows: list[dict], session: Session) -> None:
    """Each row's compile time as torch's compilation metrics count it (Dynamo + backend, rank 0).

    `compile_s` is what the user waited (measured around the calls); this is torch's own figure
    for the frames of the same function (resume functions included), None when none matched.
    """
    first_rank = session.rank_ids[0] if session.ranks else None
    for row in rows:
        name = (row["function"] or "").rsplit(".", 1)[-1]
        secs = [
            m.total_s or 0.0
            for m in session.metrics
            if m.rank == first_rank and m.file == row["file"] and m.function == name
        ]
        row["trace_compile_s"] = round(sum(secs), 3) if secs else None


def _open_or_none(path: Path) -> Session | None:
    try:
        return Session.open(path)
    except FxlensError:
        return None


def _median_s(sdir: Path, mode: str, rounds: int) -> float | None:
    """Median wall time of the child processes (interpreter start and torch import included)."""
    secs = []
    for k in range(1, rounds + 1):
        try:
            secs.append(float(Session.open(_run_dir(sdir, mode, k)).info.get("seconds")))
        except (FxlensError, TypeError, ValueError):
            continue
    return round(statistics.median(secs), 3) if secs else None


def main(args: argparse.Namespace) -> int:
    from fxlens.report.outputs import check_writable, write_json

    check_writable(args.json)

    result = doctor_script(
        args.script,
        args.script_args,
        backend=args.backend,
        rounds=args.rounds,
        nproc=args.nproc,
        timeout=config.run_timeout(args.timeout),
        budget=args.budget,
        warm=args.warm,
    )
    if args.json:
        write_json(result, args.json)
    if args.json != "-":
        sys.stdout.write(render_text(result))
    return 0 if not result["exit_codes"]["compiled"][0] else int(result["exit_codes"]["compiled"][0])


# the names `fxlens demo` and the tests import (the text itself is fxlens.report.doctor_text's)
__all__ = ["DEFAULT_BUDGET_S", "add_arguments", "doctor_script", "main"]
