"""The process of `fxlens bisect`'s CompilerBisector hand-over, from the CLI's side: where the
driver (`fxlens.bisect.inductor`) starts, how its lines are relayed, and its deadline.

The driver is forked from bisect's warm process when it can be (`forked_runs.WarmServer.hand_over`:
no interpreter start, no imports), else started as `python -m fxlens.bisect.inductor SPEC`.
Pure Python; never imports torch.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from pathlib import Path

from fxlens.capture import children

# the driver's lines the CLI shows as they come (the rest is kept for an error message)

RELAYED = ("  run ", "  skip ", "  other ", "  budget ", "  warm: ")


def warm_for(runs, spec: dict):
    """bisect's warm process, when the driver may be forked from it: steps are forked, and every
    TORCH* switch the driver sets that torch reads at import is as the warm process had it (the
    bisector's own, read through its cached env reads, are cleared in the driver)."""
    from fxlens.bisect.cache import cache_env

    if runs.warm is None or not spec["fork"]:
        return None
    env = {**cache_env(runs.session_dir), **(spec.get("env") or {})}
    return None if runs.warm.differs(env) else runs.warm


def launch(warm, spec_path: Path, echo):
    """The driver: forked from the warm process (a `ForkedDriver`), else a new interpreter."""
    if warm is not None:
        driver = warm.hand_over(spec_path, spec_path.with_name("driver-output.txt"))
        if driver is not None:
            return driver
        echo("  (the warm process is gone: the driver starts in a new interpreter)")
    return children.popen(
        [sys.executable, "-m", "fxlens.bisect.inductor", str(spec_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def relay(proc, echo, budget: float | None) -> list[str]:
    """Echo the driver's runs as they finish, until it exits or is ended at the budget's deadline;
    returns its last lines. Interrupted: the driver is ended (SIGTERM first, so it ends its steps)."""
    forked = not isinstance(proc, subprocess.Popen)
    stop = _deadline_timers(proc, budget)
    tail: list[str] = []
    try:
        for line in proc.stdout:
            if line.startswith(RELAYED):
                echo(line.rstrip("\n"))
            tail = [*tail[-20:], line.rstrip("\n")]
    except BaseException:
        proc.end() if forked else children.end(proc)
        raise
    finally:
        for timer in stop:
            timer.cancel()
    proc.wait() if forked else children.wait(proc)
    return tail


def _deadline_timers(proc, budget: float | None) -> list:
    """Timers that end the driver at the budget's deadline (SIGTERM: it writes the steps so far),
    and kill it a few seconds later if it is still there."""
    if not budget:
        return []
    timers = [
        threading.Timer(budget, children.killpg, (proc.pid, signal.SIGTERM)),
        threading.Timer(budget + 3 * children.GRACE_S, children.killpg, (proc.pid, signal.SIGKILL)),
    ]
    for t in timers:
        t.daemon = True
        t.start()
    return timers
