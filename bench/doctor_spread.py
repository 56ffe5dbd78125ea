"""Does doctor's interval hold a fresh by-hand measurement as often as its level says, and how long
does doctor sample before its verdict? Before and after, alternated in one run.

A small inductor-compiled function (a pointwise chain that inductor fuses, one thread) is measured
- by `fxlens doctor --json` K times with this checkout ("after") and K times with another checkout
  of fxlens first on PYTHONPATH (`--before DIR`, e.g. a `git archive` of the base commit with
  `fxlens` linked to its toolkit/), alternated;
- by hand in M fresh processes: eager and torch.compile'd, `torch.utils.benchmark.Timer`,
  alternating 0.1 s blocks, 20 a side; one speedup (ratio of medians) per process.
For each doctor run it counts the by-hand speedups inside its interval: the reported one, and (for
after) `timing.pairs_interval`, the same pairs' interval without the spread between processes.

Usage: python bench/doctor_spread.py [--before DIR] [-k 3] [-m 6] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCRIPT = """
import torch
torch.set_num_threads(1)

def chain(x):
    return ((x.sin() * 2).cos() + x).tanh() * 0.5 + x.exp().clamp(max=3)

x = torch.randn(256, 256)
fast = torch.compile(chain)
if __name__ == "__main__":
    for _ in range(20):
        fast(x)
"""

BY_HAND = r"""
import json, runpy, statistics, sys, torch
from torch.utils.benchmark import Timer
mod = runpy.run_path(sys.argv[1], run_name="by_hand")
f, fast, x = mod["chain"], mod["fast"], mod["x"]
for _ in range(3):
    fast(x)
t = {m: Timer("g(x)", globals={"g": g, "x": x}, num_threads=1) for m, g in (("e", f), ("c", fast))}
e, c = [], []
for i in range(20):
    for m in (("e", "c") if i % 2 == 0 else ("c", "e")):
        (e if m == "e" else c).append(t[m].blocked_autorange(min_run_time=0.1).median)
print(json.dumps({"speedup": statistics.median(e) / statistics.median(c)}))
"""


def _doctor(script: Path, before: str | None, out: Path) -> dict:
    env = dict(os.environ)
    env.pop("FXLENS_DOCTOR_MIN_SPAN", None)
    if before:
        env["PYTHONPATH"] = before
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "fxlens.cli", "doctor", "--json", str(out), str(script)],
        env=env,
        cwd=out.parent,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    wall = time.perf_counter() - t0
    row = json.loads(out.read_text())["functions"][0]
    t = row.get("timing") or {}
    return {
        "speedup": row["speedup"],
        "interval": row["speedup_interval"],
        "pairs_interval": t.get("pairs_interval"),
        "verdict": row.get("verdict"),
        "pairs": (row.get("samples") or {}).get("eager"),
        "pairs_s": t.get("pairs_seconds"),
        "stopped": t.get("stopped"),
        "wall_s": round(wall, 1),
        "load": os.getloadavg()[0],
    }


def _by_hand(script: Path) -> float:
    out = subprocess.run(
        [sys.executable, "-c", BY_HAND, str(script)], capture_output=True, text=True, check=True
    ).stdout
    return json.loads(out.strip().splitlines()[-1])["speedup"]


def _inside(iv, xs) -> int:
    return sum(1 for x in xs if iv and iv[0] <= x <= iv[1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", help="a PYTHONPATH whose fxlens is the version before")
    ap.add_argument("-k", type=int, default=3)
    ap.add_argument("-m", type=int, default=6)
    ap.add_argument("--out")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="doctor_spread_"))
    script = work / "chain.py"
    script.write_text(SCRIPT)
    runs: dict[str, list] = {"before": [], "after": []}
    hand: list[float] = []
    load0 = os.getloadavg()
    for k in range(max(args.k, args.m)):
        if k < args.m:
            hand.append(_by_hand(script))
        if k < args.k:
            for name in ("before", "after") if args.before else ("after",):
                d = work / f"{name}-{k}"
                d.mkdir()
                runs[name].append(_doctor(script, args.before if name == "before" else None, d / "r.json"))
    result = {"by_hand": hand, "runs": runs, "load_start": load0, "load_end": os.getloadavg()}
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1))
    print(f"by hand, {len(hand)} fresh processes: " + ", ".join(f"{h:.2f}x" for h in hand))
    print(f"load (1/5/15 min) at start {load0}, at end {result['load_end']}")
    print(
        "| version | doctor: speedup [95% interval] | pairs in s (stop) | by-hand inside | pairs' own interval: inside | doctor wall s |"
    )
    print("|---|---|---|---|---|---|")
    for name, rs in runs.items():
        for r in rs:
            iv, own = r["interval"], r["pairs_interval"]
            own_s = f"[{own[0]:.2f}, {own[1]:.2f}]: {_inside(own, hand)} of {len(hand)}" if own else "-"
            print(
                f"| {name} | {r['verdict']} {r['speedup']:.2f}x [{iv[0]:.2f}, {iv[1]:.2f}] | {r['pairs']} in "
                f"{r['pairs_s']:.1f} s ({r['stopped']}) | {_inside(iv, hand)} of {len(hand)} | {own_s} | {r['wall_s']} |"
            )
    for name, rs in runs.items():
        if rs:
            inside = sum(_inside(r["interval"], hand) for r in rs)
            print(
                f"{name}: {inside} of {len(rs) * len(hand)} by-hand speedups inside the reported intervals; "
                f"median pairs seconds {statistics.median(r['pairs_s'] for r in rs):.1f}"
            )


if __name__ == "__main__":
    main()
