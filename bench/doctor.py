"""Benchmarks for `fxlens doctor` (issue 7): what the probe costs, and doctor's verdicts end to end.

1. Probe overhead per call: the time the probe adds inside the timed region (what eager_ms and
   compiled_ms include) and in total (signature bookkeeping outside it), on a no-op function.
2. `fxlens doctor` on the test scripts: its own wall time and the verdicts it reaches.

Usage: python bench/doctor.py [--calls N]   (prints a Markdown section for BENCHMARKS.md)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "tests" / "doctor" / "scripts"


def probe_overhead(n: int = 20000) -> tuple[float, float]:
    """(µs added inside the timed region, µs added per call in total) for a no-op function."""
    import torch

    from fxlens.probe.hook import ProbeRecord, _timed

    def noop(x):
        return x

    rec = ProbeRecord(0, "noop", "function", "", 0, "", 0, 0, {})
    timed = _timed(noop, rec)
    x = torch.ones(2)

    def per_call(fn) -> float:
        runs = []
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(n):
                fn(x)
            runs.append((time.perf_counter() - t0) / n * 1e6)
        return statistics.median(runs)

    total = per_call(timed) - per_call(noop)
    inside = statistics.median(rec.times_ms) * 1000
    return inside, total


def doctor_runs(calls: int) -> list[list]:
    from fxlens.doctor.command import doctor_script

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for script, args in (("hurts.py", []), ("recompiles.py", []), ("helps.py", [str(calls)])):
            t0 = time.perf_counter()
            result = doctor_script(str(SCRIPTS / script), args, session_dir=Path(tmp) / script)
            took = time.perf_counter() - t0
            for f in result["functions"]:
                rows.append(
                    [
                        f"{script} {' '.join(args)}".strip(),
                        f["function"],
                        f["calls"],
                        f["eager_ms"],
                        f["compiled_ms"],
                        f"{f['speedup']}x",
                        f["compile_s"],
                        f["break_even_calls"] if f["break_even_calls"] is not None else "never",
                        ", ".join(sorted({x["kind"] for x in result["findings"]})) or "none",
                        f"{took:.1f} s",
                    ]
                )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=200, help="calls of helps.py's fused chain")
    args = parser.parse_args()
    inside, total = probe_overhead()
    rows = doctor_runs(args.calls)
    head = "| script | function | calls | eager ms | compiled ms | speedup | compile s | pays off after | findings | doctor wall |"
    print("## Doctor\n")
    print(
        f"`python -P bench/doctor.py --calls {args.calls}` (2-core CPU box, torch 2.13 CPU; other work running).\n"
    )
    print(
        f"Probe overhead per call: {inside:.2f} µs inside the timed region (included in eager ms and "
        f"compiled ms alike), {total:.2f} µs in total (input-shape bookkeeping outside it).\n"
    )
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for r in rows:
        print("| " + " | ".join(str(c) for c in r) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
