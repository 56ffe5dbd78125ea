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
    python bench/bisect_vs_torch.py --before 8672aaf --write   # fxlens as of a commit too; to BENCHMARKS.md
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


def _cpu() -> float:
    """CPU seconds (user + system) of every finished child process so far: less sensitive than
    wall time to what else the machine runs."""
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


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
    t0, cpu0 = time.perf_counter(), _cpu()
    proc = subprocess.run(
        [sys.executable, "-m", "torch._inductor.compiler_bisector", "run", sys.executable, str(case)],
        env=env,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - t0
    verdict = next((ln for ln in proc.stdout.splitlines() if ln.startswith("Bisection complete")), "")
    cpu = round(_cpu() - cpu0, 1)
    return {"runs": _count(counter), "seconds": round(seconds, 1), "cpu": cpu, "verdict": verdict.strip()}


def bench_fxlens(case: Path, tmp: Path, code: Path | None = None, name: str = "fxlens") -> dict:
    """`fxlens bisect case.py` through the CLI, from this checkout or (`code`) from a shim package
    folder of another one (`before_checkout`), so both sides start the same way."""
    counter = tmp / f"{name}-runs.txt"
    out = tmp / f"{name}.json"
    env = {**os.environ, "BENCH_COUNTER": str(counter), "FXLENS_SESSIONS_DIR": str(tmp / f"sessions-{name}")}
    if code is not None:
        env["PYTHONPATH"] = str(code)
    t0, cpu0 = time.perf_counter(), _cpu()
    proc = subprocess.run(
        [sys.executable, "-m", "fxlens.cli", "bisect", "--json", str(out), str(case)],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp,
    )
    seconds = time.perf_counter() - t0
    cpu = round(_cpu() - cpu0, 1)
    if not out.exists():
        return {
            "runs": _count(counter),
            "seconds": round(seconds, 1),
            "verdict": f"error: {proc.stderr[-300:]}",
        }
    r = json.loads(out.read_text())
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
        "cpu": cpu,
        "verdict": verdict,
        "run_times": r.get("run_times"),
    }


def before_checkout(ref: str, work: Path) -> Path:
    """A package folder importing `fxlens` from commit `ref` of this repository (a temporary git
    worktree, mapped as the install maps it: toolkit/ is fxlens, backend/ and tui/ inside it);
    put first on PYTHONPATH, it shadows the editable install."""
    root = Path(__file__).resolve().parents[1]
    tree = work / "before-tree"
    subprocess.run(
        ["git", "-C", str(root), "worktree", "add", "--detach", str(tree), ref],
        check=True,
        capture_output=True,
    )
    pkg = work / "before-pkg" / "fxlens"
    pkg.mkdir(parents=True)
    for entry in (tree / "toolkit").iterdir():
        (pkg / entry.name).symlink_to(entry)
    (pkg / "backend").symlink_to(tree / "backend")
    (pkg / "tui").symlink_to(tree / "tui")
    return pkg.parent


def drop_checkout(work: Path) -> None:
    root = Path(__file__).resolve().parents[1]
    subprocess.run(
        ["git", "-C", str(root), "worktree", "remove", "--force", str(work / "before-tree")],
        capture_output=True,
    )


CASES = ("compile_error", "runtime_error", "accuracy")


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def bench_case(bug: str, before: Path | None = None) -> dict:
    """Both tools on one case, in a fresh temporary directory, with the load average (1/5/15 min)
    before and after each tool: the box is shared, and both sides should see the same load. With
    `before` (a package folder from `before_checkout`), fxlens as it was runs too, between torch's
    run and this checkout's."""
    with tempfile.TemporaryDirectory(prefix=f"fxlens-bench-bisect-{bug}-") as d:
        tmp = Path(d)
        case = tmp / "case.py"
        case.write_text(CASE.format(bug=bug))
        out = {}
        sides = [("torch", lambda: bench_torch(case, tmp))]
        if before is not None:
            sides.append(("before", lambda: bench_fxlens(case, tmp, before, "before")))
        sides.append(("fxlens", lambda: bench_fxlens(case, tmp)))
        for name, fn in sides:
            load = _load()
            out[name] = fn()
            out[name]["load"] = f"{load} -> {_load()}"
        out["ratio"] = {
            "runs": round(out["fxlens"]["runs"] / max(out["torch"]["runs"], 1), 2),
            "seconds": round(out["fxlens"]["seconds"] / max(out["torch"]["seconds"], 1e-9), 2),
        }
        return out


ROWS = (
    ("torch", "torch CompilerBisector (`run`)"),
    ("before", "`fxlens bisect`, before"),
    ("fxlens", "`fxlens bisect`, after"),
)


def table(results: dict) -> str:
    """The Markdown table: runs, wall time, load and verdict per case and tool, and the ratios."""
    lines = [
        "| case | tool | runs | wall s | CPU s | load avg before -> after | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for bug, sides in results.items():
        first = True
        for key, name in ROWS:
            if key not in sides:
                continue
            r = sides[key]
            lines.append(
                f"| {bug if first else ''} | {name} | {r['runs']} | {r['seconds']:.1f} | {r.get('cpu', 0):.1f} "
                f"| {r['load']} | {r['verdict']} |"
            )
            first = False
        ratio, a, t = sides["ratio"], sides["fxlens"], sides["torch"]
        cpu = a.get("cpu", 0) / max(t.get("cpu", 0), 1e-9)
        lines.append(
            f"| | **after / torch** | **{ratio['runs']}** | **{ratio['seconds']:.2f}** | **{cpu:.2f}** | | |"
        )
        if "before" in sides:
            b = sides["before"]
            lines.append(
                f"| | before / torch | {b['runs'] / max(t['runs'], 1):.2f} | {b['seconds'] / max(t['seconds'], 1e-9):.2f} "
                f"| {b.get('cpu', 0) / max(t.get('cpu', 0), 1e-9):.2f} | | |"
            )
            lines.append(
                f"| | after / before | {a['runs'] / max(b['runs'], 1):.2f} | {a['seconds'] / max(b['seconds'], 1e-9):.2f} "
                f"| {a.get('cpu', 0) / max(b.get('cpu', 0), 1e-9):.2f} | | |"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", metavar="FILE")
    ap.add_argument("--cases", default=",".join(CASES), help=f"comma-separated subset of {', '.join(CASES)}")
    ap.add_argument(
        "--before", metavar="REF", help="also fxlens as of git commit REF (e.g. main at the start)"
    )
    ap.add_argument(
        "--write",
        action="store_true",
        help="write the table as BENCHMARKS.md's `## Bisect: before and after` section",
    )
    ap.add_argument("--notes", metavar="FILE", help="Markdown appended to the written section (analysis)")
    opts = ap.parse_args()
    results = {}
    with tempfile.TemporaryDirectory(prefix="fxlens-bench-before-") as d:
        before = before_checkout(opts.before, Path(d)) if opts.before else None
        try:
            for bug in opts.cases.split(","):
                results[bug] = bench_case(bug, before)
                print(f"[{bug}] {json.dumps(results[bug])}", file=sys.stderr, flush=True)
                if opts.json:  # written after each case: a long bench interrupted keeps what it measured
                    Path(opts.json).write_text(json.dumps(results, indent=2) + "\n")
        finally:
            if before is not None:
                drop_checkout(Path(d))
    text = table(results)
    print(text)
    if opts.write:
        from benchmarks_md import write_section

        when = time.strftime("%d %B %Y %H:%M UTC", time.gmtime())
        head = (
            f"`python bench/bisect_vs_torch.py --cases {opts.cases}"
            + (f" --before {opts.before}" if opts.before else "")
            + f" --write` ({when}; 2-core CPU box shared with other work, torch 2.13 CPU). Per case, in one "
            "run, alternated: torch's `compiler_bisector run`, then fxlens as of the `--before` commit (a "
            "temporary git worktree on PYTHONPATH), then this checkout; every execution of the case "
            "script is counted by the script itself.\n\n"
        )
        notes = Path(opts.notes).read_text() if opts.notes else ""
        write_section("Bisect: before and after (issue 24)", head + text + ("\n" + notes if notes else ""))


if __name__ == "__main__":
    main()
