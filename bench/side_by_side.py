"""Before and after in one run, alternated: `fxlens report`'s start, a 1024-rank report against
tlparse --all-ranks-html, and the log scan's CPU.

    python bench/side_by_side.py --before DIR [--rounds 5] [--ranks 1024] [--what startup,ranks,scan]

DIR is a PYTHONPATH whose `fxlens` is the version before (e.g. `git archive BASE | tar -x -C B`,
`ln -s ../backend B/toolkit/backend`, `ln -s B/toolkit DIR/fxlens`); "after" is this checkout.
Each command runs in turn, `--rounds` times; a cell is the median wall / CPU time (the process and
those it waited for), and each ratio is against a reference measured in the same rounds: the
interpreter's own start (`python -c pass`) or tlparse. The 1-minute load is printed beside them.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "ranks"))
from rank_replicas import replicate  # noqa: E402
from ranks import _tl  # noqa: E402

LOG_250K = HERE.parent / "tests" / "data" / "tlparse" / "simple.log"


def _run(cmd: list[str], env: dict | None = None) -> tuple[float, float]:
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(
        cmd,
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def _rounds(cmds: dict, rounds: int) -> dict:
    got = {k: [] for k in cmds}
    for _ in range(rounds):
        for k, (cmd, env) in cmds.items():
            got[k].append(_run(cmd, env))
    return {
        k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in got.items()
    }


def _table(title: str, res: dict, ref: str, rounds: int, load0: float) -> str:
    rw, rc = res[ref]
    lines = [
        f"{title} (median of {rounds}, alternated; 1-minute load {load0:.1f} at the start, "
        f"{os.getloadavg()[0]:.1f} at the end)",
        "",
        f"| command | wall | wall / {ref} | CPU | CPU / {ref} |",
        "|---|---|---|---|---|",
    ]
    for k, (w, c) in res.items():
        lines.append(f"| {k} | {w * 1000:.0f} ms | {w / rw:.2f}x | {c * 1000:.0f} ms | {c / rc:.2f}x |")
    return "\n".join(lines)


def _fx(args: list[str], before: str | None) -> tuple[list[str], dict]:
    return [sys.executable, "-m", "fxlens.cli", *args], ({"PYTHONPATH": before} if before else {})


def startup(before: str, rounds: int) -> str:
    load0 = os.getloadavg()[0]
    cmds = {
        "python -c pass": ([sys.executable, "-c", "pass"], {}),
        "fxlens --version, before": _fx(["--version"], before),
        "fxlens --version, after": _fx(["--version"], None),
        f"fxlens report {LOG_250K.name} (249 KB), before": _fx(["report", str(LOG_250K)], before),
        f"fxlens report {LOG_250K.name} (249 KB), after": _fx(["report", str(LOG_250K)], None),
    }
    return _table("Start-up", _rounds(cmds, rounds), "python -c pass", rounds, load0)


def ranks(before: str, rounds: int, n: int) -> str:
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        job = replicate(tmp / f"job{n}", n, (777 if n > 777 else n - 1,))
        cmds = {
            f"tlparse --all-ranks-html, {n} ranks": (_tl(Path(job), tmp), {}),
            "fxlens report --json, before": _fx(["report", str(job), "--json", str(tmp / "b.json")], before),
            "fxlens report --json, after": _fx(["report", str(job), "--json", str(tmp / "a.json")], None),
        }
        res = _rounds(cmds, rounds)
    return _table(f"{n} ranks", res, f"tlparse --all-ranks-html, {n} ranks", rounds, load0)


SCAN = "import sys, time; from fxlens.trace.reader import scan_log; t = time.process_time(); scan_log(sys.argv[1]); print(time.process_time() - t)"


def scan(before: str, rounds: int, mb: int) -> str:
    from ranks import big_log

    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as d:
        log = big_log(Path(d) / "big.log", mb)
        got: dict[str, list[float]] = {"scan_log, before": [], "scan_log, after": []}
        for _ in range(rounds):
            for k, env in (("scan_log, before", {"PYTHONPATH": before}), ("scan_log, after", {})):
                out = subprocess.run(
                    [sys.executable, "-c", SCAN, str(log)],
                    env={**os.environ, **env},
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
                got[k].append(float(out.strip()))
    b, a = (statistics.median(v) for v in got.values())
    return (
        f"scan_log of one {mb} MB log, process CPU in the reading process (median of {rounds}, alternated; "
        f"load {load0:.1f} -> {os.getloadavg()[0]:.1f}): before {b:.2f} s, after {a:.2f} s, after / before {a / b:.2f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--ranks", type=int, default=1024)
    ap.add_argument("--mb", type=int, default=100)
    ap.add_argument("--what", default="startup,ranks,scan")
    args = ap.parse_args()
    what = args.what.split(",")
    if "startup" in what:
        print(startup(args.before, args.rounds), "\n", flush=True)
    if "ranks" in what:
        print(ranks(args.before, max(1, args.rounds // 2), args.ranks), "\n", flush=True)
    if "scan" in what:
        print(scan(args.before, max(1, args.rounds // 2), args.mb), flush=True)


if __name__ == "__main__":
    main()
