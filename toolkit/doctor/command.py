"""`fxlens doctor SCRIPT [ARGS...]`: is torch.compile helping this script, and what should change?

The script runs in child processes, side by side: once with every torch.compile forced eager (the
baseline) and once compiled (its own backend, or --backend), --rounds times each, alternating.
fxlens.doctor.probe times every call of every compiled object in both; the compiled run's session
(TORCH_TRACE and events) also gives graph breaks, recompile causes and limit hits. The result is a
table of compiled functions (eager vs compiled per call, compile time, break-even) and a ranked
list of findings, each saying what to change at which line of the user's code.

Public API (used by `fxlens demo`): `doctor_script(script, args, backend=...) -> dict` and
`render_text(result) -> str`.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

from tabulate import tabulate

from fxlens import config
from fxlens.capture.backends import check_spec
from fxlens.capture.command import (
    add_timeout_argument,
    check_script,
    how_it_ended,
    refused_message,
    run_captured,
    shell_status,
)
from fxlens.capture.runner import REFUSED
from fxlens.doctor.findings import findings as rank_findings
from fxlens.doctor.probe import OUTPUT_FILE
from fxlens.doctor.stats import RunStats, function_rows, peak_memory, probe_runs, wall_times
from fxlens.errors import FxlensError
from fxlens.report.build import build_report
from fxlens.trace.session import Session, append_event, new_session_dir, write_info
from fxlens.trace.userframes import innermost_user_frame, parse_traceback, short_path


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
        "--nproc", metavar="N", type=int, default=0, help="launch N local processes through torchrun"
    )
    add_timeout_argument(parser)


# the line of a traceback that names the exception: `RuntimeError: ...`, `torch._dynamo.exc.X: ...`
PROBE_HOOK = "fxlens.doctor.probe:runner_hook"  # what the runner child calls first (FXLENS_RUNNER_HOOK)
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


def _run(script, args, run_dir: Path, mode: str, backend, nproc, timeout):
    run_dir.mkdir(parents=True, exist_ok=True)
    # the script's own output goes to OUTPUT_FILE (the probe redirects it in the child); what is
    # printed before that (torchrun's banner) is captured here and dropped
    return run_captured(
        script,
        list(args),
        backend=backend if mode == "compiled" else None,
        session_dir=str(run_dir),
        nproc=nproc,
        env={config.ENV_DOCTOR_PROBE: mode, config.ENV_RUNNER_HOOK: PROBE_HOOK},
        timeout=timeout,
        stdout=os.devnull,  # the probe writes the script's output to output.log itself
        stderr=os.devnull,
    )


def _where(f: dict) -> str:
    """`file:line` of a finding (just the file when the line is unknown)."""
    if not f.get("file"):
        return "?"
    return short_path(f["file"]) + (f":{f['line']}" if f.get("line") else "")


def _summary(script: str, rows: list[dict], wall: dict, found: list[dict]) -> str:
    both = [r for r in rows if r["eager_ms"] is not None and r["compiled_ms"] is not None and r["calls"]]
    eager = sum(r["eager_ms"] * r["calls"] for r in both)
    compiled = sum(r["compiled_ms"] * r["calls"] for r in both)
    compile_s = sum(r["compile_s"] or 0.0 for r in rows)
    parts = [f"{Path(script).name}: {len(rows)} compiled function(s)"]
    if compiled:
        ratio = eager / compiled
        verdict = f"{ratio:.2f}x faster" if ratio >= 1 else f"{1 / ratio:.2f}x slower"
        parts.append(f"compiled {verdict} at steady state, {compile_s:.2f} s compiling")
    if wall["eager_s"] is not None and wall["compiled_s"] is not None:
        parts.append(f"script {wall['eager_s']:.2f} s eager vs {wall['compiled_s']:.2f} s compiled")
    top = found[0] if found else None
    parts.append(f"{len(found)} finding(s)" + (f", top: {top['kind']} at {_where(top)}" if top else ""))
    return "; ".join(parts)


@dataclass
class _Rounds:
    """What the eager and compiled runs gave: the probe's stats per round, and each exit status."""

    eager: list[list[RunStats]] = field(default_factory=list)
    compiled: list[list[RunStats]] = field(default_factory=list)
    codes: dict[str, list] = field(default_factory=lambda: {"eager": [], "compiled": []})


def _run_dir(sdir: Path, mode: str, k: int) -> Path:
    # round 1's compiled run is the doctor session itself: `fxlens report`/tui show its trace
    return sdir if (mode, k) == ("compiled", 1) else sdir / f"{mode}-{k}"


def _run_rounds(script, args, sdir: Path, backend, rounds: int, nproc: int, timeout) -> _Rounds:
    """Eager, then compiled, `rounds` times (alternating, so drift hits both alike)."""
    done = _Rounds()
    for k in range(1, rounds + 1):
        for mode in ("eager", "compiled"):
            run_dir = _run_dir(sdir, mode, k)
            result = _run(script, args, run_dir, mode, backend, nproc, timeout)
            session = Session.open(run_dir)
            if result.exit_code == REFUSED and (msg := refused_message(session)):
                raise FxlensError(msg)
            done.codes[mode].append(result.exit_code)
            (done.eager if mode == "eager" else done.compiled).append(probe_runs(session))
            if (mode, k, result.exit_code) == ("eager", 1, 0) and not _called_compile(session):
                # the same script compiled would compile nothing either: say so now, not a run later
                raise _compiles_nothing(script, sdir)
    return done


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


def _diagnose(script, args, sdir: Path, session: Session, runs: _Rounds, *, backend, rounds, nproc, timeout):
    """The result dict from the rounds' timings and the compiled session's report."""
    rows = function_rows(runs.eager, runs.compiled)
    _add_trace_compile_times(rows, session)
    report = build_report(session, with_guards=False)
    failed, failed_at = _compiled_failure(sdir, runs.codes, timeout)
    memory = peak_memory(runs.eager, runs.compiled)
    found = rank_findings(
        rows, report, cuda=memory["kind"] == "cuda_allocator", failed=failed, failed_at=failed_at
    )
    wall = wall_times(runs.eager, runs.compiled)
    result = {
        "script": os.path.abspath(script),
        "argv": list(args),
        "backend": backend,
        "backends_used": sorted({str(r["options"].get("backend")) for r in rows}),
        "rounds": rounds,
        "nproc": nproc,
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
    }
    result["summary"] = _summary(script, rows, wall, found)
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

    Returns:
        The JSON-ready result (DESIGN.md contract: `functions`, `peak_memory`, `findings`, plus
        `summary`, `wall`, `session` and more). It is also appended to the session as a `doctor`
        event.

    Raises:
        FxlensError: missing script, refused backend, a script that fails before compiling, or a
            script that compiles nothing (one line each).
    """
    check_script(script)
    if rounds < 1:
        raise FxlensError(f"--rounds must be at least 1, not {rounds}")
    if backend:
        check_spec(backend)
    sdir = Path(session_dir) if session_dir else new_session_dir(config.load().sessions_dir, script)
    sdir.mkdir(parents=True, exist_ok=True)
    runs = _run_rounds(script, args, sdir, backend, rounds, nproc, timeout)
    main_session = Session.open(sdir)
    if not any(run.records for stats in runs.compiled for run in stats):
        raise _nothing_timed(script, sdir, main_session, runs.codes["compiled"][0], timeout)
    result = _diagnose(
        script, args, sdir, main_session, runs, backend=backend, rounds=rounds, nproc=nproc, timeout=timeout
    )
    append_event(sdir, "doctor", result)
    info = dict(main_session.info)
    info.update(command="doctor", doctor_rounds=rounds)
    write_info(sdir, info)
    return result


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


def _median_s(sdir: Path, mode: str, rounds: int) -> float | None:
    """Median wall time of the child processes (interpreter start and torch import included)."""
    secs = []
    for k in range(1, rounds + 1):
        try:
            secs.append(float(Session.open(_run_dir(sdir, mode, k)).info.get("seconds")))
        except (FxlensError, TypeError, ValueError):
            continue
    return round(statistics.median(secs), 3) if secs else None


def _mib(n: int | None) -> str:
    return "?" if n is None else f"{n / 2**20:.0f} MiB"


def _num(x, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def _function_lines(result: dict) -> list[str]:
    """The compiled functions side by side: per-call times, compile time, break-even."""
    rows = [
        [
            f["function"],
            f"{short_path(f['compiled_at']['file'] or '?')}:{f['compiled_at']['line']}",
            f["calls"],
            _num(f["eager_ms"], ".4g"),
            _num(f["compiled_ms"], ".4g"),
            _num(f["speedup"], ".2f") + ("x" if f["speedup"] is not None else ""),
            _num(f["compile_s"], ".2f"),
            _num(f["break_even_calls"], "d")
            if f["break_even_calls"] is not None
            else ("never" if f["calls"] else "-"),
        ]
        for f in result["functions"]
    ]
    title = "Compiled functions (per call at steady state"
    if any(f.get("backward_not_timed") for f in result["functions"]):
        title += "; forward only: backward runs outside the call and shows in the wall time"
    headers = ["function", "compiled at", "calls", "eager ms", "compiled ms", "speedup", "compile s"]
    return [title + "):", tabulate(rows, headers=[*headers, "pays off after"], tablefmt="simple")]


def _memory_lines(result: dict) -> list[str]:
    mem, wall = result["peak_memory"], result["wall"]
    kind = "CUDA allocator" if mem["kind"] == "cuda_allocator" else "process RSS"
    rows = [
        ["script wall time", _num(wall["eager_s"], ".2f") + " s", _num(wall["compiled_s"], ".2f") + " s"],
        [f"peak memory ({kind})", _mib(mem["eager"]), _mib(mem["compiled"])],
    ]
    return ["", tabulate(rows, headers=["", "eager", "compiled"], tablefmt="simple"), ""]


def _finding_lines(result: dict) -> list[str]:
    found = result["findings"]
    if not found:
        return ["No findings: torch.compile does what it should here."]
    out = ["Findings, by estimated cost to you (ms lost over this run):"]
    for i, f in enumerate(found, 1):
        where = _where(f)
        cost = f"cost ~{f['cost_ms']:.0f} ms" if f["cost_ms"] else "cost not measured"
        out.append(f"{i:>2}. [{f['kind']}] {f['message']}  ({cost})")
        out.append(f"    at {where}: {f['fix']}")
    return out


def render_text(result: dict) -> str:
    """The human report: compiled functions side by side, memory and wall time, ranked findings."""
    ranks = result.get("ranks") or []
    head = f"fxlens doctor: {short_path(result['script'])}"
    if len(ranks) > 1:
        head += f" ({len(ranks)} ranks; per-call times: rank {ranks[0]}; memory and wall time: the largest over ranks)"
    out = [head, result["summary"], ""]
    out += _function_lines(result) + _memory_lines(result) + _finding_lines(result)
    out += ["", f"session: {result['session']}   (fxlens report / fxlens tui on it)"]
    return "\n".join(out) + "\n"


def main(args: argparse.Namespace) -> int:
    from fxlens.report.command import check_writable, write_json

    check_writable(args.json)

    result = doctor_script(
        args.script,
        args.script_args,
        backend=args.backend,
        rounds=args.rounds,
        nproc=args.nproc,
        timeout=config.run_timeout(args.timeout),
    )
    if args.json:
        write_json(result, args.json)
    if args.json != "-":
        sys.stdout.write(render_text(result))
    return 0 if not result["exit_codes"]["compiled"][0] else int(result["exit_codes"]["compiled"][0])


# the name `fxlens demo` imports (render_text is this module's own, like fxlens.report.build's)
render_doctor = render_text
