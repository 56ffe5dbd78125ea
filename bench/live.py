"""The cost of `fxlens run`'s live status line: alternated runs with and without it.

    python bench/live.py [--pairs 7] [--write]

Each run is `fxlens run` of bench/live_workload.py (31 compiles of one function with aot_eager: 30
recompiles) with stdin, stdout and stderr a pseudo-terminal, as in a terminal; the baseline passes
`--no-live`, everything else is the same. Runs alternate (live first in even pairs, baseline first in
odd ones) so drift and the machine's other load hit both alike. Reported: the median over pairs of
the script's wall time (session.json `seconds`: the child's start to its exit) with / without, the
median fxlens wall time, and CPU time (fxlens and every process it waited for, from
getrusage(RUSAGE_CHILDREN)), with the load average before and after each run.
"""

from __future__ import annotations

import argparse
import json
import os
import pty
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORKLOAD = HERE / "live_workload.py"


def _load() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def run_once(live: bool, session: Path) -> dict:
    """One `fxlens run` on a pty; its times."""
    master, slave = pty.openpty()
    args = [sys.executable, "-m", "fxlens.cli", "run", "--session", str(session)]
    args += [] if live else ["--no-live"]
    env = {**os.environ, "TERM": "xterm"}
    load0 = _load()
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.Popen([*args, str(WORKLOAD)], stdin=slave, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    raw = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        raw += chunk
    os.close(master)
    code = proc.wait()
    wall = time.perf_counter() - t0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    info = json.loads((session / "session.json").read_text())
    return {
        "live": live,
        "code": code,
        "script_s": info["seconds"],
        "fxlens_s": wall,
        "cpu_s": (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime),
        "load": (load0, _load()),
        "status_drawn": b"fxlens | " in raw,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=7)
    ap.add_argument("--write", action="store_true", help="write the result into BENCHMARKS.md")
    a = ap.parse_args(argv)
    runs: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="fxlens-live-bench-") as tmp:
        run_once(True, Path(tmp) / "warmup")  # caches, imports: not counted
        for i in range(a.pairs):
            order = (True, False) if i % 2 == 0 else (False, True)
            for live in order:
                r = run_once(live, Path(tmp) / f"{i}-{'live' if live else 'base'}")
                assert r["code"] == 0, r
                runs.append(r)
                print(
                    f"pair {i} {'live' if live else 'base'}: script {r['script_s']:.2f}s, fxlens "
                    f"{r['fxlens_s']:.2f}s, cpu {r['cpu_s']:.2f}s, load {r['load'][0]:.1f}->{r['load'][1]:.1f}",
                    flush=True,
                )
    live = [r for r in runs if r["live"]]
    base = [r for r in runs if not r["live"]]
    assert all(r["status_drawn"] for r in live) and not any(r["status_drawn"] for r in base)

    def med(rs, k):
        return statistics.median(r[k] for r in rs)

    ratios = [lv["script_s"] / b["script_s"] for lv, b in zip(live, base)]
    loads = [x for r in runs for x in r["load"]]
    rows = [
        ("script wall time (session seconds)", med(base, "script_s"), med(live, "script_s")),
        ("fxlens run wall time", med(base, "fxlens_s"), med(live, "fxlens_s")),
        ("CPU time, fxlens and its children", med(base, "cpu_s"), med(live, "cpu_s")),
    ]
    table = [f"| measure (median of {a.pairs} alternated pairs) | `--no-live` | live | ratio | target |"]
    table.append("|---|---|---|---|---|")
    for name, b, lv in rows:
        target = "<= 1.02" if name.startswith("script") else ""
        table.append(f"| {name} | {b:.2f} s | {lv:.2f} s | {lv / b:.3f} | {target} |")
    text = "\n".join(table)
    notes = (
        f"\n\nMedian of the per-pair ratios (script wall time, live / --no-live): {statistics.median(ratios):.3f} "
        f"(each pair: {', '.join(f'{x:.3f}' for x in ratios)}).\n"
        f"1-minute load average over the runs: min {min(loads):.1f}, median {statistics.median(loads):.1f}, "
        f"max {max(loads):.1f} ({os.cpu_count()} cores; other engineers' work was running on the machine).\n"
    )
    print(text + notes)
    if a.write:
        from benchmarks_md import write_section

        write_section(
            "Live status line (fxlens run on a terminal)",
            "`python bench/live.py --write`: `fxlens run` of bench/live_workload.py (31 compiles, aot_eager, "
            "30 recompiles) on a pseudo-terminal, alternated with `--no-live`. The live view reads the trace "
            "from the fxlens process (a thread polling every 0.5 s, reading only appended bytes), not the "
            "script's, so its cost to the script is the CPU it takes from a busy 2-core box.\n\n"
            + text
            + notes,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
