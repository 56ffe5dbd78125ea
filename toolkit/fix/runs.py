"""One run of the script for `fxlens fix`: its environment, the child's fixes, what it measured.

Each run is `fxlens.capture.command.run_captured` with fxlens.fix.child as the runner hook, its own
empty inductor and Triton cache (compile seconds are cold), the script's output in the run's
`output.log`, and the recorder's outputs in `outputs.pt`. What it measured is read back from the
run's own session: torch's trace, the child's `fix_child` event, doctor's probe (--speed).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from fxlens import config
from fxlens.capture.command import refused_message, run_captured
from fxlens.capture.runner import REFUSED
from fxlens.capture.stdin import STDIN_FILE
from fxlens.errors import FxlensError
from fxlens.fix import measure
from fxlens.report.exits import how_it_ended
from fxlens.report.fixes import FIXES
from fxlens.trace.session import Session

CHILD_HOOK = "fxlens.fix.child:runner_hook"
OUTPUTS = "outputs.pt"
# seconds between progress lines while one run goes on
TICK_S = 15.0


class Progress:
    """One stderr line per run started, and one every TICK_S while it runs: which fix, which run."""

    def __init__(self, total: int):
        self.total, self.t0 = total, time.monotonic()

    def run(self, n: int, what: str, fn):
        print(f"fxlens fix: [{n}/{self.total or '?'}] {what}", file=sys.stderr, flush=True)
        start = time.monotonic()
        done = threading.Event()

        def tick() -> None:
            while not done.wait(TICK_S):
                print(
                    f"fxlens fix:   ... {what}: {time.monotonic() - start:.0f} s "
                    f"({time.monotonic() - self.t0:.0f} s in all)",
                    file=sys.stderr,
                    flush=True,
                )

        threading.Thread(target=tick, daemon=True).start()
        try:
            return fn()
        finally:
            done.set()


def _env(run_dir: Path, actions: list[dict], speed: float, stance: str = "", launch=None) -> dict:
    env = {
        **(launch.env if launch else {}),
        config.ENV_RUNNER_HOOK: CHILD_HOOK,
        config.ENV_FIX_ACTIONS: json.dumps(actions),
        config.ENV_FIX_OUTPUTS: str(run_dir.absolute() / OUTPUTS),
        config.ENV_FIX_STANCE: stance,
        # cold: each run compiles from nothing, so compile seconds compare (and no run warms the next)
        "TORCHINDUCTOR_CACHE_DIR": str(run_dir.absolute() / "inductor-cache"),
        "TRITON_CACHE_DIR": str(run_dir.absolute() / "inductor-cache" / "triton"),
    }
    if speed and all(FIXES[a["kind"]].speed for a in actions):
        env.update({config.ENV_DOCTOR_PROBE: "compiled", config.ENV_DOCTOR_BUDGET: str(speed)})
    return env


@dataclass
class Launch:
    """How every run of one `fxlens fix` starts the script, the same as the first run did: the
    launcher (torchrun with N processes), the working directory, the environment switches, and
    the standard input (recorded by the first run, replayed by each re-run)."""

    nproc: int = 0
    cwd: str | None = None
    env: dict = field(default_factory=dict)
    stdin: object = None  # stdin.RECORD for the first run, then the recording's path

    def replay(self, sdir: Path) -> None:
        """After the first run: the re-runs read what it read (nothing, when it read a terminal)."""
        rec = sdir / STDIN_FILE
        self.stdin = str(rec) if rec.exists() else subprocess.DEVNULL


def one_run(script, args, run_dir: Path, actions, *, backend, timeout, speed, stance="", launch=None) -> dict:
    """Run the script once with ACTIONS; what it measured, read from its own session."""
    run_dir.mkdir(parents=True, exist_ok=True)
    log = run_dir / "output.log"
    launch = launch or Launch()
    result = run_captured(
        script,
        list(args),
        backend=backend,
        session_dir=str(run_dir),
        nproc=launch.nproc,
        env=_env(run_dir, actions, speed, stance, launch),
        timeout=timeout,
        stdout=log,
        stderr=log,
        stdin=launch.stdin,
        cwd=launch.cwd,
    )
    shutil.rmtree(run_dir / "inductor-cache", ignore_errors=True)  # cold runs: never read again
    session = Session.open(run_dir)
    if result.exit_code == REFUSED and (msg := refused_message(session)):
        raise FxlensError(msg)
    return read_run(session, run_dir, result.exit_code, result.seconds, timeout)


def read_run(session: Session, run_dir: Path, code: int | None, seconds: float | None, timeout=None) -> dict:
    # no trace at all: torch writes none until something compiles
    got, _ = measure.measures(session) if session.logs else (dict(measure.NOTHING), None)
    child = next((e for e in reversed(session.events) if e.get("event") == "fix_child"), {})
    if child.get("peak_rss"):  # rank 0's peak resident memory, MiB, at the script's exit
        got = {**got, "peak_memory": round(child["peak_rss"] / 2**20, 1)}
    return {
        "dir": str(run_dir),
        "exit_code": code,
        "ended": how_it_ended(code, timeout) if code else "",
        "seconds": round(seconds, 2) if seconds is not None else None,
        "measures": got,
        "applied": child.get("applied") or {},
        "notes": child.get("notes") or {},
        "compiled": child.get("compiled") or [],
        "loaders": child.get("loaders") or [],
        "stdin_read": bool(child.get("stdin_read")),
        "recorder": {"calls": child.get("calls") or {}, "objects": child.get("objects") or {}},
        "outputs": measure.load_outputs(run_dir / OUTPUTS) if (run_dir / OUTPUTS).exists() else None,
        "speed": _speed(session),
    }


def _speed(session: Session) -> list[dict] | None:
    """Steady-state speedup per compiled function with doctor's interval (--speed), else None."""
    from fxlens.probe.stats import function_rows, probe_runs

    runs = probe_runs(session)
    if not runs:
        return None
    rows = function_rows([], [runs])
    return [
        {
            k: r.get(k)
            for k in ("function", "file", "line", "eager_ms", "compiled_ms", "speedup", "speedup_interval")
        }
        for r in rows
    ]


_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception)\b.*")


def error_line(log: Path) -> str:
    """The last exception line a failed re-run printed (`ConstraintViolationError: ...`), shortened."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    line = next((ln.strip() for ln in reversed(lines) if _EXCEPTION.match(ln.strip())), "")
    return re.sub(r"^[\w.]*\.(?=\w+(Error|Exception)\b)", "", line)[:200]  # the class name, not its module
