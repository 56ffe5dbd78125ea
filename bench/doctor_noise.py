"""Does `fxlens doctor` keep its verdicts on a busy machine? (issue 24)

Runs doctor on the same scripts quiet and under deliberate contention (N spinning processes
pinned to the cores doctor may use: tests/doctor/contention.py) and prints a Markdown table:
per compiled function, the quiet verdict and interval, the contended verdict and interval, and
whether they agree (the same verdict, or one of them "inconclusive"). Each run's doctor wall
time is shown beside the same script under `--budget 0` (no re-timing after the script: the
runs doctor made before the interleaved measurement existed).

Usage: python bench/doctor_noise.py [--spinners 2] [--budget 3] [--out FILE.json] [SCRIPT ...]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "tests" / "doctor" / "scripts"
sys.path.insert(0, str(ROOT / "tests" / "doctor"))  # the contention harness the tests use

from contention import agree, busy, cores, doctor_json  # noqa: E402

DEFAULT = ["faster_by_construction", "slower_by_construction", "helps", "hurts", "recompiles"]


def _timed(script: Path, budget: float, sessions: Path) -> tuple[dict, float]:
    t0 = time.perf_counter()
    result = doctor_json(script, "--budget", str(budget), sessions=sessions)
    return result, time.perf_counter() - t0


def _cell(row: dict) -> str:
    iv = row.get("speedup_interval")
    ivs = f"[{iv[0]:.2f}, {iv[1]:.2f}]" if iv else "[no interval]"
    n = min((row.get("samples") or {"n": 0}).values())
    return f"{row['verdict']} {row['speedup']:.2f}x {ivs} ({n})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("scripts", nargs="*", default=DEFAULT, help="names in tests/doctor/scripts")
    ap.add_argument("--spinners", type=int, default=2)
    ap.add_argument("--budget", type=float, default=3.0)
    ap.add_argument("--out", help="also write every result as JSON here")
    args = ap.parse_args()
    rows, raw = [], []
    with tempfile.TemporaryDirectory() as tmp:
        sessions = Path(tmp)
        for name in args.scripts:
            script = SCRIPTS / f"{name}.py"
            _, before_s = _timed(script, 0, sessions)
            quiet, quiet_s = _timed(script, args.budget, sessions)
            with busy(args.spinners):
                loud, loud_s = _timed(script, args.budget, sessions)
            raw.append({"script": name, "quiet": quiet, "contended": loud, "budget0_s": before_s})
            for q, c in zip(quiet["functions"], loud["functions"], strict=True):
                rows.append(
                    [
                        f"{name}.py `{q['function']}`",
                        _cell(q),
                        f"{quiet['load']['average']:.1f}",
                        _cell(c),
                        f"{loud['load']['average']:.1f}",
                        "yes" if agree(q["verdict"], c["verdict"]) else "**NO**",
                        f"{before_s:.1f} / {quiet_s:.1f} / {loud_s:.1f}",
                    ]
                )
    head = [
        "script `function`",
        "quiet: verdict speedup [95% CI] (pairs)",
        "load",
        f"{args.spinners} spinners: verdict speedup [95% CI] (pairs)",
        "load",
        "agree?",
        "doctor wall s: --budget 0 / quiet / contended",
    ]
    print(
        f"`python bench/doctor_noise.py --spinners {args.spinners} --budget {args.budget:g}` "
        f"({platform.machine()}, {os.cpu_count()} cores, affinity {cores()}, Python {platform.python_version()}; "
        f"{time.strftime('%Y-%m-%d', time.gmtime())})\n"
    )
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(r) + " |")
    if args.out:
        Path(args.out).write_text(json.dumps(raw, indent=1))
    return 0 if all(r[5] == "yes" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
