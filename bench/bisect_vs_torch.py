"""Runs and wall time: `fxlens bisect` vs torch's CompilerBisector on the same inductor failure.

The failure: inductor's own `cpp.inject_relu_bug_TESTING_ONLY = "accuracy"` (relu computes x + 1)
in one of three graphs of a small script. Torch's side is its documented CLI,
`python -m torch._inductor.compiler_bisector run python case.py`, which needs the script to pick
the backend from TORCH_COMPILE_BACKEND and to exit non-zero when the compiled result differs from
eager; fxlens's side is `fxlens bisect case.py` (stages, graph, then the same CompilerBisector on
that graph alone). Every run of the case script appends a line to a counter file, so both sides'
runs are counted the same way.

    python bench/bisect_vs_torch.py            # prints the table
    python bench/bisect_vs_torch.py --json F   # also writes the numbers
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

CASE = """
import os, sys
import torch

with open(os.environ["BENCH_COUNTER"], "a") as f:
    f.write("run\\n")
torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "accuracy"
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
        "seconds": round(seconds, 1),
        "verdict": verdict,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", metavar="FILE")
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="fxlens-bench-bisect-") as d:
        tmp = Path(d)
        case = tmp / "case.py"
        case.write_text(CASE)
        torch_side = bench_torch(case, tmp)
        fx_side = bench_fxlens(case, tmp)
    rows = [("torch CompilerBisector (run mode)", torch_side), ("fxlens bisect", fx_side)]
    print(f"{'tool':<36} {'runs':>5} {'wall s':>8}  verdict")
    for name, r in rows:
        print(f"{name:<36} {r['runs']:>5} {r['seconds']:>8.1f}  {r['verdict']}")
    if opts.json:
        Path(opts.json).write_text(json.dumps({"torch": torch_side, "fxlens": fx_side}, indent=2) + "\n")


if __name__ == "__main__":
    main()
