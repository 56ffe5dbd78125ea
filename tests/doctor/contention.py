"""Deliberate contention for doctor's verdicts, and a quiet measurement by another method.

Shared by tests/doctor/test_doctor_contention.py and bench/doctor_noise.py:
- `busy(n)`: n spinning Python processes pinned (os.sched_setaffinity) to the cores this process
  may use, so the script doctor times competes with them for every core it can run on.
- `plain_speedup(script)`: eager vs compiled of a ground-truth script's `step`, with a plain
  `time.perf_counter` loop in a fresh interpreter (not torch.utils.benchmark, not doctor's probe).
- `agree(quiet, contended)`: the rule the harness checks: the same direction, or "inconclusive".
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

# a spinner: pins itself to the given cores, then burns CPU until killed
_SPIN = (
    "import os, sys; os.sched_setaffinity(0, {int(c) for c in sys.argv[1].split(',')})\nwhile True: pass\n"
)

# eager and compiled `step` of SCRIPT, blocks alternated, medians of per-call times: the quiet check
_PLAIN = r"""
import json, runpy, statistics, sys, time
mod = runpy.run_path(sys.argv[1], run_name="plain_timing")
step, args, fast = mod["step"], mod["inputs"](), mod["compile_step"]()
for _ in range(3):
    step(*args); fast(*args)
def per_call(fn, n):
    t0 = time.perf_counter()
    for _ in range(n):
        fn(*args)
    return (time.perf_counter() - t0) / n * 1000
e, c = [], []
for i in range(int(sys.argv[2])):
    for mode in (("e", "c") if i % 2 == 0 else ("c", "e")):
        (e if mode == "e" else c).append(per_call(step if mode == "e" else fast, 5))
print(json.dumps({"eager_ms": statistics.median(e), "compiled_ms": statistics.median(c)}))
"""


def cores() -> list[int]:
    return sorted(os.sched_getaffinity(0))


@contextlib.contextmanager
def busy(n: int):
    """n processes spinning on the cores this process may use; killed (by their pids) on exit."""
    pinned = ",".join(map(str, cores()))
    procs = [subprocess.Popen([sys.executable, "-c", _SPIN, pinned]) for _ in range(n)]
    try:
        yield procs
    finally:
        for p in procs:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p.pid, signal.SIGKILL)
            p.wait()


def plain_speedup(script: Path, rounds: int = 40) -> dict:
    """`{eager_ms, compiled_ms, speedup, verdict}` from a plain perf_counter loop in a fresh process."""
    out = subprocess.run(
        [sys.executable, "-c", _PLAIN, str(script), str(rounds)], capture_output=True, text=True, timeout=300
    )
    if out.returncode:
        raise RuntimeError(out.stderr[-2000:])
    got = json.loads(out.stdout.strip().splitlines()[-1])
    got["speedup"] = got["eager_ms"] / got["compiled_ms"]
    got["verdict"] = "faster" if got["speedup"] > 1 else "slower"
    return got


def agree(quiet: str, contended: str) -> bool:
    """Never a contradiction: the same verdict, or one of them says it cannot tell."""
    return quiet == contended or "inconclusive" in (quiet, contended)


def doctor_json(script: Path, *extra: str, sessions: Path, timeout: float = 600) -> dict:
    """`fxlens doctor --json - SCRIPT` in a child process; its result."""
    env = dict(os.environ, FXLENS_SESSIONS_DIR=str(sessions))
    proc = subprocess.run(
        [sys.executable, "-m", "fxlens.cli", "doctor", "--json", "-", *extra, str(script)],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
    if proc.returncode:
        raise RuntimeError(proc.stderr[-3000:])
    return json.loads(proc.stdout)
