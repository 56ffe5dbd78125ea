"""Runs and wall time: `fxlens bisect` vs torch's CompilerBisector on the same inductor failure.

The failures: inductor's own `cpp.inject_relu_bug_TESTING_ONLY` switch, one case per kind:
`compile_error` (the C++ compile fails), `runtime_error` (the kernel raises), `accuracy` (relu
computes x + 1), in one of three graphs of a small script. Torch's side is its documented CLI,
`python -m torch._inductor.compiler_bisector run python case.py`, which needs the script to pick
the backend from TORCH_COMPILE_BACKEND and to exit non-zero when the compiled result differs from
eager; fxlens's side is `fxlens bisect case.py` (stages, graph, then the same CompilerBisector on
that graph alone). Every run of the case script appends a line to a counter file, so both sides'
runs are counted the same way.

    python bench/bisect_vs_torch.py                      # all three cases, prints the table
    python bench/bisect_vs_torch.py --cases accuracy     # one case
    python bench/bisect_vs_torch.py --json F             # also writes the numbers
"""

from __future__ import annotations

import argparse  # noqa: E402
import json  # noqa: E402
import os
import subprocess  # noqa: E402
import sys
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

# the case script, formatted with {bug} (a value of inductor's inject_relu_bug_TESTING_ONLY)
CASE = """
import os, sys
import torch

with open(os.environ["BENCH_COUNTER"], "a") as f:
    f.write("run\\n")
torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "{bug}"
backend = os.environ.get("TORCH_COMPILE_BACKEND", "inductor")


@torch.compile(backend=backend)
def embed(x):
    return torch.sin(x) * 2 + 1


@torch.compile(backend=backend)
def block(x, w):
    y = x @ w
    torch._dynamo.graph_break()
    return torch.relu(y - 0.5) * 3


torch.manual_seed(0)
x, w = torch.randn(4, 8), torch.randn(8, 8)
got = block(embed(x), w)
want = (torch.relu((torch.sin(x) * 2 + 1) @ w - 0.5)) * 3
sys.exit(0 if torch.allclose(got, want, atol=1e-4, rtol=1e-4) else 1)
"""


def _count(counter: Path) -> int:
    return len(counter.read_text().splitlines()) if counter.exists() else 0


def bench_torch(case: Path, tmp: Path) -> dict:
    counter = tmp / "torch-runs.txt"
    env = {
        **os.environ,
        "BENCH_COUNTER": str(counter),
        # the CLI deletes its cache dir when it starts and ends: never the user's
        "TORCHINDUCTOR_CACHE_DIR": str(tmp / "torch-cache"),
    }
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "torch._inductor.compiler_bisector", "run", sys.executable, str(case)],
        env=env,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - t0
    verdict = next((ln for ln in proc.stdout.splitlines() if ln.startswith("Bisection complete")), "")
    return {"runs": _count(counter), "seconds": round(seconds, 1), "verdict": verdict.strip()}


def bench_fxlens(case: Path, tmp: Path) -> dict:
    from fxlens.bisect.command import bisect_script

    counter = tmp / "fxlens-runs.txt"
    os.environ["BENCH_COUNTER"] = str(counter)
    os.environ["FXLENS_SESSIONS_DIR"] = str(tmp / "sessions")
    t0 = time.perf_counter()
    r = bisect_script(str(case), [], echo=lambda line: None)
    seconds = time.perf_counter() - t0
    cb = r.get("compiler_bisector") or {}
    c = r.get("culprit") or {}
    verdict = (
        f"stage {r.get('first_failing_stage')}, graph {c.get('compile_id')} ({c.get('function')}), "
        f"CompilerBisector: {cb.get('subsystem')} #{cb.get('bisect_number')} {cb.get('debug_info') or ''}"
    )
    return {
        "runs": _count(counter),
        "reported_runs": r["runs"],
        # the CompilerBisector handover's share (its steps forked from a warm driver)
        "handover_runs": cb.get("runs"),
        "handover_seconds": cb.get("seconds"),
        "seconds": round(seconds, 1),
        "verdict": verdict,
    }


CASES = ("compile_error", "runtime_error", "accuracy")


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def bench_case(bug: str) -> dict:
    """Both tools on one case, in a fresh temporary directory, with the load average (1/5/15 min)
    before and after each tool: the box is shared, and both sides should see the same load."""
    with tempfile.TemporaryDirectory(prefix=f"fxlens-bench-bisect-{bug}-") as d:
        tmp = Path(d)
        case = tmp / "case.py"
        case.write_text(CASE.format(bug=bug))
        out = {}
        for name, fn in (("torch", bench_torch), ("fxlens", bench_fxlens)):
            before = _load()
            out[name] = fn(case, tmp)
            out[name]["load"] = f"{before} -> {_load()}"
        out["ratio"] = {
            "runs": round(out["fxlens"]["runs"] / max(out["torch"]["runs"], 1), 2),
            "seconds": round(out["fxlens"]["seconds"] / max(out["torch"]["seconds"], 1e-9), 2),
        }
        return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", metavar="FILE")
    ap.add_argument("--cases", default=",".join(CASES), help=f"comma-separated subset of {', '.join(CASES)}")
    opts = ap.parse_args()
    results = {}
    for bug in opts.cases.split(","):
        results[bug] = bench_case(bug)
        print(f"[{bug}] {json.dumps(results[bug])}", file=sys.stderr, flush=True)
        if opts.json:  # written after each case: a long bench interrupted keeps what it measured
            Path(opts.json).write_text(json.dumps(results, indent=2) + "\n")
    print(f"{'case':<14} {'tool':<36} {'runs':>5} {'wall s':>8}  {'load avg':<28} verdict")
    for bug, sides in results.items():
        for name, r in (
            ("torch CompilerBisector (run mode)", sides["torch"]),
            ("fxlens bisect", sides["fxlens"]),
        ):
            print(f"{bug:<14} {name:<36} {r['runs']:>5} {r['seconds']:>8.1f}  {r['load']:<28} {r['verdict']}")
        ratio = sides["ratio"]
        print(f"{bug:<14} {'fxlens / torch':<36} {ratio['runs']:>5} {ratio['seconds']:>8.2f}")
    if opts.json:
        Path(opts.json).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
