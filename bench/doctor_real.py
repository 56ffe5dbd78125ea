"""`fxlens doctor` on real models, quiet and beside busy processes, against a by-hand measurement.

For each model of bench/doctor_real_model.py (HF ViT, Wav2Vec2, Llama with small configs and
random weights, and a ResNet-18 layout; inductor; eval mode under no_grad) and each thread setting
(`--threads 1,0`: OMP_NUM_THREADS=1, and unset, torch's default) this runs:
- `fxlens doctor --json` as the machine is (the load is recorded as os.getloadavg saw it, and the
  tasks doctor saw runnable beside its own while it timed), then beside N spinning processes
  (`while 1: pass`);
- by hand, in `--hand-runs` fresh processes: the same model and inputs (`build`), eager and
  torch.compile'd, timed with `torch.utils.benchmark.Timer.blocked_autorange`, alternating, 30
  blocks a side: the ratio of the medians, the ratio of the fastest blocks (what a call costs when
  nothing stalls it), and the IQR of the per-pair ratios. Several processes, because a fresh
  process is itself a source of spread (allocation, memory layout) that no one process's interval
  can see.
It prints a Markdown table: each verdict with its interval, pairs and the seconds doctor sampled,
the load, the by-hand speedups, whether they agree (same verdict; how many by-hand runs fall in
doctor's interval, and the furthest one's distance from doctor's speedup), and the findings
doctor's own replay caused (must be none). `--write` puts the table in BENCHMARKS.md.

Usage: python bench/doctor_real.py [--spinners 2] [--threads 1,0] [--hand-runs 3] [--out F.json]
       [--write] [MODEL ...]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODELS = ["vit", "wav2vec2", "resnet", "llama"]

_BY_HAND = r"""
import json, statistics, sys, torch
sys.path.insert(0, sys.argv[1])
from doctor_real_model import build
from torch.utils.benchmark import Timer
model, kw = build(sys.argv[2])
compiled = torch.compile(model)
with torch.no_grad():
    for _ in range(3):
        compiled(**kw)
    t = {m: Timer("f(**kw)", globals={"f": f, "kw": kw}, num_threads=torch.get_num_threads())
         for m, f in (("eager", model), ("compiled", compiled))}
    e, c = [], []
    for i in range(30):
        for m in (("eager", "compiled") if i % 2 == 0 else ("compiled", "eager")):
            (e if m == "eager" else c).append(t[m].blocked_autorange(min_run_time=0.2).median * 1000)
ratios = sorted(a / b for a, b in zip(e, c))
q = statistics.quantiles(ratios, n=4)
print(json.dumps({"eager_ms": statistics.median(e), "compiled_ms": statistics.median(c),
                  "speedup": statistics.median(e) / statistics.median(c), "fastest": min(e) / min(c),
                  "ratio_iqr": [q[0], q[2]]}))
"""


def _load() -> float:
    return round(os.getloadavg()[0], 2)


@contextlib.contextmanager
def busy(n: int):
    """n processes spinning (`while 1: pass`) beside the run; killed by their pids on exit."""
    procs = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(n)]
    try:
        yield
    finally:
        for p in procs:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p.pid, signal.SIGKILL)
            p.wait()


def doctor(model: str, sessions: Path, env: dict) -> dict:
    before = _load()
    t0 = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "fxlens.cli",
            "doctor",
            "--json",
            "-",
            str(HERE / "doctor_real_model.py"),
            model,
        ],
        capture_output=True,
        text=True,
        env={**env, "FXLENS_SESSIONS_DIR": str(sessions)},
        timeout=1800,
    )
    wall = time.perf_counter() - t0
    if proc.returncode:
        return {"error": proc.stderr.strip().splitlines()[-1:] or ["?"], "wall_s": wall}
    result = json.loads(proc.stdout)
    (row,) = result["functions"]
    return {
        "verdict": row["verdict"],
        "speedup": row["speedup"],
        "interval": row["speedup_interval"],
        "pairs": min(row["samples"].values()),
        "sampled_s": (row.get("timing") or {}).get("seconds"),
        "stopped": (row.get("timing") or {}).get("stopped"),
        "eager_ms": row["eager_ms"],
        "compiled_ms": row["compiled_ms"],
        "load_before": before,
        "load": result["load"]["average"],
        "others_runnable": result["load"].get("others_runnable"),
        "wall_s": round(wall, 1),
        "findings": [f["kind"] for f in result["findings"]],
        "replay_compiles": (result.get("replay") or {}).get("compiles"),
        "recompiles": result["recompiles"],
        "graph_breaks": result["graph_breaks"],
    }


def by_hand(model: str, env: dict, runs: int = 1) -> dict:
    """The by-hand measurement in `runs` fresh processes: the first run's detail, every run's speedup."""
    got = [_by_hand_once(model, env) for _ in range(runs)]
    if any("error" in g for g in got):
        return next(g for g in got if "error" in g)
    return {**got[0], "runs": [round(g["speedup"], 4) for g in got]}


def _by_hand_once(model: str, env: dict) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", _BY_HAND, str(HERE), model],
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
    )
    if proc.returncode:
        return {"error": proc.stderr.strip().splitlines()[-1:]}
    return {**json.loads(proc.stdout.strip().splitlines()[-1]), "load": _load()}


def torch_recompiles(model: str, env: dict) -> int | str:
    """Recompiles torch itself logs for a plain run of the model's script (no fxlens in it)."""
    env = {**env, "TORCH_LOGS": "recompiles"}
    env.pop("TORCH_TRACE", None)
    proc = subprocess.run(
        [sys.executable, str(HERE / "doctor_real_model.py"), model],
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
    )
    return proc.stderr.count("Recompiling function") if proc.returncode == 0 else "error"


def _cell(d: dict) -> str:
    if "error" in d:
        return f"error: {d['error']}"
    iv = d["interval"]
    ivs = f"[{iv[0]:.2f}, {iv[1]:.2f}]" if iv else "[no interval]"
    return (
        f"{d['verdict']} {d['speedup']:.2f}x {ivs}, {d['pairs']} pairs in {d['sampled_s']:.0f} s "
        f"({d['stopped']}); load {d['load_before']:.1f}-{d['load']:.1f}"
        + (f", {d['others_runnable']:g} others runnable" if d.get("others_runnable") is not None else "")
    )


def agrees(d: dict, hand: dict) -> str:
    """Same verdict as by hand; how many by-hand runs fall in doctor's interval; the furthest one's
    distance from doctor's speedup."""
    if "error" in d or "error" in hand:
        return "?"
    if d["verdict"] == "inconclusive":
        return "no claim"
    runs = hand.get("runs") or [hand["speedup"]]
    said = {"faster" if r > 1 else "slower" for r in runs}
    lo, hi = d["interval"]
    inside = sum(lo <= r <= hi for r in runs)
    furthest = max(abs(r / d["speedup"] - 1) for r in runs)
    return (
        "yes" if said == {d["verdict"]} else "NO"
    ) + f"; {inside} of {len(runs)} by-hand runs in interval; furthest {furthest:.1%} from doctor's"


def _hand_cell(hand: dict) -> str:
    if "error" in hand:
        return f"error: {hand['error']}"
    runs = hand.get("runs") or [hand["speedup"]]
    return (
        f"{', '.join(f'{r:.2f}x' for r in runs)} (first: {hand['eager_ms']:.3g} / {hand['compiled_ms']:.3g} ms; "
        f"fastest {hand['fastest']:.2f}x; pair ratios IQR [{hand['ratio_iqr'][0]:.2f}, "
        f"{hand['ratio_iqr'][1]:.2f}]), load {hand['load']:.1f}"
    )


def _row(key: str, d: dict) -> str:
    quiet, loud, hand, truth = d["quiet"], d["busy"], d["by_hand"], d.get("torch_recompiles", "?")
    model, _, threads = key.partition("@")
    return (
        f"| {model} | {threads or '1'} | {_cell(quiet)} | {_hand_cell(hand)} | {agrees(quiet, hand)} | "
        f"{_cell(loud)} | "
        + f"{quiet.get('recompiles', '?')} / {loud.get('recompiles', '?')} (torch: {truth}); "
        + f"{quiet.get('graph_breaks', '?')} / {loud.get('graph_breaks', '?')}; "
        + f"{quiet.get('replay_compiles', '?')} / {loud.get('replay_compiles', '?')} | "
        + f"{quiet.get('wall_s')} / {loud.get('wall_s')} |"
    )


def table(raw: dict, spinners: int) -> str:
    return "\n".join(
        [
            "| model | OMP_NUM_THREADS (default: unset) | doctor quiet: verdict speedup [95% CI], pairs in "
            "s (stop), load | by hand (torch.utils.benchmark), one speedup per fresh process | agree? | doctor beside "
            f"{spinners} busy processes | recompiles quiet / busy (TORCH_LOGS=recompiles on a plain "
            "run); graph breaks; compiles doctor's replay caused (kept out) | doctor wall s (quiet / busy) |",
            "|---|---|---|---|---|---|---|---|",
            *(_row(m, d) for m, d in raw.items()),
        ]
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="*", default=MODELS)
    ap.add_argument("--spinners", type=int, default=2)
    ap.add_argument(
        "--threads", default="1,0", help="OMP_NUM_THREADS settings to run, comma-separated (0: unset)"
    )
    ap.add_argument("--hand-runs", type=int, default=3, help="fresh processes for the by-hand measurement")
    ap.add_argument("--out", help="also write every result as JSON here")
    ap.add_argument("--load", metavar="FILE", help="print (and --write) the table of an earlier --out")
    ap.add_argument("--write", action="store_true", help="put the table in BENCHMARKS.md")
    args = ap.parse_args()
    raw = json.loads(Path(args.load).read_text()) if args.load else {}
    settings = [] if args.load else [int(t) for t in args.threads.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        for threads in settings:
            env = dict(os.environ)
            env.pop("OMP_NUM_THREADS", None)
            if threads:
                env["OMP_NUM_THREADS"] = str(threads)
            for model in args.models:
                key = f"{model}@{threads or 'default'}"
                quiet = doctor(model, Path(tmp), env)
                hand = by_hand(model, env, args.hand_runs)
                with busy(args.spinners):
                    loud = doctor(model, Path(tmp), env)
                raw[key] = {
                    "quiet": quiet,
                    "busy": loud,
                    "by_hand": hand,
                    "torch_recompiles": torch_recompiles(model, env),
                }
                if args.out:
                    Path(args.out).write_text(json.dumps(raw, indent=1))
                print(_row(key, raw[key]), flush=True)
    text = table(raw, args.spinners)
    print(text)
    if args.write:
        from benchmarks_md import write_table

        write_table("fxlens doctor on real models", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
