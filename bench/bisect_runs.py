"""`fxlens bisect` with runs forked from a warm process (the default) vs a new interpreter per run.

Same script, same failure, back to back in one process of this bench: the verdict must be the same
(stage, graph, culprit, kernel, run count); the table gives each side's wall time and the ratio.

Cases (tests/bisect/scripts/multi.py, three graphs):
- `fxlens-erf-accuracy`: fxlens's backend with `FXLENS_INJECT=accuracy:aten.erf`, training: the
  ladder, the graph and the kernel search (6 runs);
- `inductor-relu-compile`: inductor's `cpp.inject_relu_bug_TESTING_ONLY` compile error, stopped
  before torch's CompilerBisector (`--no-compiler-bisector`): the inductor ladder and the graph.

    python bench/bisect_runs.py [--write]      # --write: the section of BENCHMARKS.md
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MULTI = ROOT / "tests" / "bisect" / "scripts" / "multi.py"
CASES = {
    "fxlens-erf-accuracy": (
        [str(MULTI), "fxlens", "--op", "erf", "--train"],
        {"FXLENS_INJECT": "accuracy:aten.erf"},
        [],
    ),
    "inductor-relu-compile": (
        [str(MULTI), "--inductor-relu-bug", "compile_error"],
        {},
        ["--no-compiler-bisector"],
    ),
}
VERDICT_KEYS = ("first_failing_stage", "outcome", "culprit", "runs", "graph")


def bisect(case: str, fresh: bool) -> dict:
    args, env, opts = CASES[case]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "v.json"
        full_env = {
            **os.environ,
            **env,
            "FXLENS_SESSIONS_DIR": tmp,
            "FXLENS_BISECT_FRESH_RUNS": "1" if fresh else "0",
        }
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "fxlens.cli", "bisect", "--json", str(out), *opts, *args],
            capture_output=True,
            text=True,
            env=full_env,
        )
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            raise SystemExit(f"{case} ({'fresh' if fresh else 'forked'}): {proc.stderr[-2000:]}")
        v = json.loads(out.read_text())
    return {"wall": wall, "verdict": {k: v.get(k) for k in VERDICT_KEYS}, "summary": v["summary"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="write the section of BENCHMARKS.md")
    ap.add_argument("--cases", nargs="*", default=list(CASES))
    a = ap.parse_args()
    rows = []
    for case in a.cases:
        load0 = os.getloadavg()[0]
        forked, fresh = bisect(case, fresh=False), bisect(case, fresh=True)
        same = forked["verdict"] == fresh["verdict"]
        rows.append(
            f"| {case} | {forked['verdict']['runs']} | {forked['wall']:.1f} | {fresh['wall']:.1f} | "
            f"**{forked['wall'] / fresh['wall']:.2f}** | {'yes' if same else 'NO'} | {load0:.1f} -> "
            f"{os.getloadavg()[0]:.1f} | {forked['summary']} |"
        )
        print(rows[-1], flush=True)
        if not same:
            print(json.dumps({"forked": forked["verdict"], "fresh": fresh["verdict"]}, indent=1))
    table = "\n".join(
        [
            "| case | runs | forked s | fresh s | forked / fresh | same verdict | load (1 min) | verdict |",
            "|---|---|---|---|---|---|---|---|",
            *rows,
        ]
    )
    print(table)
    if a.write:
        sys.path.insert(0, str(Path(__file__).parent))
        from benchmarks_md import write_section

        text = (
            "`python bench/bisect_runs.py --write`: `fxlens bisect` with every run forked from one process\n"
            "that imported torch, inductor and the wrapper once (the default), against\n"
            "`FXLENS_BISECT_FRESH_RUNS=1` (a new interpreter per run), back to back on the same failure\n"
            f"(2-core CPU box, torch {_torch_version()}). Measured {time.strftime('%d %B %Y %H:%M UTC', time.gmtime())}.\n\n"
            + table
        )
        write_section("Bisect: forked runs", text)


def _torch_version() -> str:
    out = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True
    )
    return out.stdout.strip()


if __name__ == "__main__":
    main()
