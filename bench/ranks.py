"""fxlens report vs tlparse on many-rank jobs and one big log: wall time, CPU time, peak RSS.

    python bench/ranks.py [--ranks 64,256,1024] [--mb 100] [--write]

The jobs are the real 2-rank gloo trace of tests/data/ranks grown to N ranks (rank 777, or the last
rank of a smaller job, recompiles on a short batch; tests/ranks/rank_replicas.py). The single log
is rank 1's log repeated with shifted frame ids until it passes --mb (every compile id distinct).
Each command runs once, in turn, on the same machine: CPU time is the process and every process it
waited for (the reading pool's workers included); peak RSS is the largest sum over the process
tree, sampled every 20 ms. tlparse gets `--all-ranks-html` on a directory (its multi-rank report).
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "ranks"))
from benchmarks_md import write_section  # noqa: E402
from rank_replicas import _source, replicate  # noqa: E402


def _tree_rss_kb(pid: int) -> int:
    """RSS of `pid` and its descendants, in KB (from /proc)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(d))
        rss[int(d)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE") // 1024
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += rss.get(p, 0)
        todo += children.get(p, [])
    return total


def measure(cmd: list[str], env: dict | None = None) -> dict:
    """One run of `cmd`: wall s, CPU s (it and the processes it waited for), peak tree RSS MB."""
    t = time.perf_counter()
    proc = subprocess.Popen(
        cmd, env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    peak = 0
    while True:
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            break
        peak = max(peak, _tree_rss_kb(proc.pid))
        time.sleep(0.02)
    wall = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}")
    # the sampled tree sum, or the largest single process when the run ended between two samples
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "rss_mb": max(peak, ru.ru_maxrss) / 1024}


def big_log(out: Path, mb: int) -> Path:
    """Rank 1's real log, repeated with frame ids shifted by 1000 a copy, to >= `mb` MB."""
    src = _source(1).encode()
    size, k = 0, 0
    with open(out, "wb") as f:
        while size < mb * 1e6:
            s = k * 1000
            data = re.sub(rb'"frame_id": (\d+)', lambda m, s=s: b'"frame_id": %d' % (int(m[1]) + s), src)
            data = re.sub(
                rb'"compile_id": "(\d+)/', lambda m, s=s: b'"compile_id": "%d/' % (int(m[1]) + s), data
            )
            f.write(data)
            size, k = size + len(data), k + 1
    return out


def _fx(path: Path, tmp: Path) -> list[str]:
    return [sys.executable, "-m", "fxlens.cli", "report", str(path), "--json", str(tmp / "r.json")]


def _tl(path: Path, tmp: Path) -> list[str]:
    many = ["--all-ranks-html"] if path.is_dir() else []
    return [
        shutil.which("tlparse") or "tlparse",
        str(path),
        *many,
        "-o",
        str(tmp / "tl"),
        "--overwrite",
        "--no-browser",
    ]


def _mb(path: Path) -> float:
    files = list(path.glob("*.log")) if path.is_dir() else [path]
    return sum(p.stat().st_size for p in files) / 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", default="64,256,1024")
    ap.add_argument("--mb", type=int, default=100)
    ap.add_argument("--startup-rounds", type=int, default=5)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    have_tl = shutil.which("tlparse") is not None
    rows = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        inputs = []
        for n in (int(x) for x in args.ranks.split(",")):
            inputs.append((f"{n} ranks", replicate(tmp / f"job{n}", n, (777 if n > 777 else n - 1,))))
        inputs.append(("1 log", big_log(tmp / "big.log", args.mb)))
        for name, path in inputs:
            row = {"input": name, "mb": _mb(path)}
            row["fx"] = measure(_fx(path, tmp))
            row["fx1"] = measure(_fx(path, tmp), {"FXLENS_READ_JOBS": "1"})
            row["tl"] = measure(_tl(path, tmp)) if have_tl else None
            rows.append(row)
            print(row, flush=True)
        small = Path(replicate(tmp / "small", 1, ())) / "dedicated_log_torch_trace_rank_0_replica.log"
        fx_runs = [measure(_fx(small, tmp)) for _ in range(args.startup_rounds)]
        tl_runs = [measure(_tl(small, tmp)) for _ in range(args.startup_rounds)] if have_tl else []
        start = {
            "fx": statistics.median(m["wall"] for m in fx_runs),
            "fx_cpu": statistics.median(m["cpu"] for m in fx_runs),
            "tl": statistics.median(m["wall"] for m in tl_runs) if tl_runs else None,
            "tl_cpu": statistics.median(m["cpu"] for m in tl_runs) if tl_runs else None,
            "kb": small.stat().st_size / 1e3,
        }
        print(start, flush=True)
    text = markdown(rows, start, args)
    print(text)
    if args.write:
        write_section("Many ranks: fxlens report vs tlparse", text)


def _cell(m: dict | None) -> str:
    return "-" if m is None else f"{m['wall']:.2f} s / {m['cpu']:.2f} s / {m['rss_mb']:.0f} MB"


def markdown(rows: list[dict], start: dict, args) -> str:
    load = os.getloadavg()
    tl_version = subprocess.run(["tlparse", "--version"], capture_output=True, text=True).stdout.strip()
    out = [
        f"`python bench/ranks.py --ranks {args.ranks} --mb {args.mb} --write`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())};",
        f"{platform.machine()} box with {os.cpu_count()} cores shared with other work (load average "
        f"{load[0]:.1f} at the end), Python {platform.python_version()}, {tl_version or 'tlparse absent'}.",
        "Each cell: wall time / CPU time (the process and the processes it waited for) / peak RSS",
        "(largest sum over the process tree). One run per cell, in turn.",
        "",
        "| input | MB | fxlens report (all cores) | fxlens report (FXLENS_READ_JOBS=1) | tlparse |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r['input']} | {r['mb']:.0f} | {_cell(r['fx'])} | {_cell(r['fx1'])} | {_cell(r['tl'])} |"
        )
    tl = f"{start['tl']:.3f} s wall / {start['tl_cpu']:.3f} s CPU" if start["tl"] is not None else "-"
    out += [
        "",
        f"Start-up on a small log ({start['kb']:.0f} KB, one rank of the job), median of "
        f"{args.startup_rounds}: fxlens report {start['fx']:.3f} s wall / {start['fx_cpu']:.3f} s CPU, "
        f"tlparse {tl}.",
    ]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    main()
