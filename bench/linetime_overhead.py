"""What the line-time attribution (fxlens.capture.linetime) costs a compile, paired in one process.

For each model (bench/compile_lines.py's: a planted 300-layer loop, an 8-layer HF Llama, T5 from a
config), one process compiles it `--pairs` times with the attribution on and `--pairs` times off,
alternated (on/off, off/on, ...), `torch._dynamo.reset()` before each, on the compiling thread's CPU
clock (`time.thread_time`: another process's load does not count in it). backend="eager", so the
compile is all Dynamo, the only stage the attribution wraps: the overhead on an inductor compile is
this one times Dynamo's share of it.

    python bench/linetime_overhead.py [--models loop,llama,t5] [--pairs 10] [--write]

The overhead is the ratio of the summed CPU seconds (on / off), with a 95% bootstrap interval over
pairs, and the median of the per-pair ratios.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compile_lines import _installed, paired  # noqa: E402

HEADING = "Line-time attribution: measured overhead (paired, in one process)"


def _interval(on: list[float], off: list[float], draws: int = 4000) -> tuple[float, float]:
    rng, n = random.Random(0), len(on)
    got = []
    for _ in range(draws):
        idx = [rng.randrange(n) for _ in range(n)]
        got.append(sum(on[i] for i in idx) / sum(off[i] for i in idx))
    got.sort()
    return got[int(0.025 * draws)], got[int(0.975 * draws) - 1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="loop,llama,t5")
    ap.add_argument("--pairs", type=int, default=10)
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args()
    rows = [
        "| model | pairs | CPU s per compile, on / off (median) | overhead: sum on / sum off [95%] | median pair | load |",
        "|---|---|---|---|---|---|",
    ]
    for m in a.models.split(","):
        if not _installed(m):
            print(f"{m}: not installed, skipped", file=sys.stderr)
            continue
        p = paired(m, a.pairs)
        on, off = p["on"], p["off"]
        lo, hi = _interval(on, off)
        rows.append(
            f"| {m} | {len(on)} | {statistics.median(on):.2f} / {statistics.median(off):.2f} "
            f"| {sum(on) / sum(off) - 1:+.1%} [{lo - 1:+.1%}, {hi - 1:+.1%}] "
            f"| {p['median_ratio'] - 1:+.1%} | {p['load']:.1f} |"
        )
        print(rows[-1], flush=True)
    text = "\n".join(rows)
    print(text)
    if a.write:
        from benchmarks_md import write_section

        write_section(HEADING, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
