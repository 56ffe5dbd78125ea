"""`fxlens minify` side by side with torch's own minifier, on the same failing graphs.

For each case: run `fxlens minify` end to end (capture, reduce on the worker pool, write and re-run
the reproducer 3 times), then hand the very graph fxlens captured (its code and recorded inputs,
from the minify session) to `torch._functorch.fx_minifier.minifier` in-process, with a
`module_fails` that compiles with the same backend and compares the same failure signature.
Optionally (`--launcher`) also torch's `repro_after="aot"` launcher on the inductor case.

Reported per case: queries, wall seconds, final call nodes, final input bytes.

    python bench/minify.py [--cases relu_crash,relu_accuracy,fxlens_erf,inductor] [--launcher] [--write]

`--write` replaces the `## Minify` section of BENCHMARKS.md with the table.
"""

from __future__ import annotations

import argparse  # noqa: E402
import copy  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import subprocess  # noqa: E402
import sys
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from benchmarks_md import write_section  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "tests" / "minify" / "scripts"

# name -> (script, args, extra environment, what it is)
CASES = {
    "relu_crash": ("mlp.py", ["relu_compile_error_TESTING_ONLY", "12"], {}, "compile crash, 12 blocks"),
    "relu_accuracy": ("mlp.py", ["relu_accuracy_error_TESTING_ONLY", "12"], {}, "accuracy, 12 blocks"),
    "fxlens_erf": (
        "mlp.py",
        ["fxlens", "8", "--op", "erf"],
        {"FXLENS_INJECT": "compile_error:aten.erf"},
        "fxlens backend, FXLENS_INJECT compile_error:aten.erf, 8 blocks",
    ),
    "inductor": ("inductor_relu.py", ["compile_error", "8"], {}, "inductor C++ inject_relu_bug, 8 blocks"),
}


def _cpu() -> float:
    """CPU seconds (user + system) of every finished child process so far."""
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run_fxlens(name: str, work: Path) -> dict:
    script, args, env, _ = CASES[name]
    out = work / f"{name}.json"
    env = {
        **os.environ,
        **env,
        "FXLENS_SESSIONS_DIR": str(work / "sessions"),
        "FXLENS_REPRO_DIR": str(work / "repro"),
    }
    t0, cpu0 = time.perf_counter(), _cpu()
    proc = subprocess.run(
        [sys.executable, "-m", "fxlens.cli", "minify", "--json", str(out), str(SCRIPTS / script), *args],
        env=env,
        capture_output=True,
        text=True,
        cwd=work,
    )
    if proc.returncode != 0:
        raise SystemExit(f"fxlens minify failed on {name}: {proc.stderr[-2000:]}")
    r = json.loads(out.read_text())
    r["wall"] = time.perf_counter() - t0
    r["cpu"] = _cpu() - cpu0  # every process it started (workers, zygote, re-runs) included
    out.unlink()
    return r


def run_torch_minifier(name: str, r: dict) -> dict:
    """torch's fx_minifier, in-process, on the graph fxlens captured (same inputs, same signature)."""
    import torch
    from torch._functorch.fx_minifier import minifier

    from fxlens.capture.backends import resolve
    from fxlens.minify.candidate_check import run_check
    from fxlens.minify.graph import CALL_OPS, load_graph_module

    _, _, env, _ = CASES[name]
    os.environ.update(env)
    cap = Path(r["session"]) / "capture"
    k = r["graph"]
    meta = json.loads((cap / f"graph_{k}.json").read_text())
    import torch._functorch.config
    import torch._inductor.config

    for line in meta["config"]:  # the script's config (e.g. inductor's injected bug), as fxlens carries it
        exec(line, {"torch": torch})
    values = torch.load(cap / f"values_{k}.pt", weights_only=True)
    inps = [values[f"arg{i}"] for i in range(len(values))]
    gm = load_graph_module((cap / f"graph_{k}.py").read_text())
    backend = resolve(r["backend"])
    queries = [0]

    def module_fails(mod, inputs) -> bool:
        queries[0] += 1
        torch._dynamo.reset()
        # a fresh copy per use: some backends (relu_accuracy_error_TESTING_ONLY) rewrite the graph
        sig = run_check(
            lambda: copy.deepcopy(mod),
            lambda: [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs],
            backend,
            r["check"],
        )
        return sig == r["signature"]

    t0 = time.perf_counter()
    stderr = sys.stderr
    sys.stderr = open(os.devnull, "w")  # fx_minifier narrates every step
    try:
        small, small_inps = minifier(gm, inps, module_fails, dump_state=lambda *a: None)
    finally:
        sys.stderr.close()
        sys.stderr = stderr
    return {
        "queries": queries[0],
        "seconds": time.perf_counter() - t0,
        "final_nodes": sum(1 for n in small.graph.nodes if n.op in CALL_OPS),
        "input_bytes": sum(t.numel() * t.element_size() for t in small_inps if isinstance(t, torch.Tensor)),
    }


def run_launcher(name: str, work: Path) -> dict:
    """torch's own route: TORCHDYNAMO_REPRO_AFTER=aot writes a launcher; run its minify step."""
    script, args, env, _ = CASES[name]
    d = work / f"launcher_{name}"
    d.mkdir(exist_ok=True)
    env = {
        **os.environ,
        **env,
        "TORCHDYNAMO_REPRO_AFTER": "aot",
        "TORCHDYNAMO_REPRO_LEVEL": "2",
        "TORCH_COMPILE_DEBUG_DIR": str(d),
    }
    t0, cpu0 = time.perf_counter(), _cpu()
    subprocess.run(
        [sys.executable, str(SCRIPTS / script), *args], env=env, cwd=d, capture_output=True, text=True
    )
    launchers = sorted(d.rglob("minifier_launcher.py"))
    if not launchers:
        return {"error": "no launcher written"}
    proc = subprocess.run(
        [sys.executable, str(launchers[-1])],
        env=env,
        cwd=launchers[-1].parent,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - t0
    # each query of the launcher is one subprocess script in minifier/isolate/
    queries = len(list(d.rglob("minifier/isolate/*.py")))
    checkpoints = sorted(d.rglob("minifier/checkpoints/*.py"), key=lambda p: p.stat().st_mtime)
    final = None
    if checkpoints:
        text = checkpoints[-1].read_text()
        final = len(re.findall(r"= torch\.ops\.", text))
    cpu = _cpu() - cpu0
    return {"seconds": seconds, "cpu": cpu, "queries": queries, "final_nodes": final, "exit": proc.returncode}


METHOD = """`python bench/minify.py --cases {cases}{launcher}` (2-core CPU box shared with other
engineers' builds and tests, torch 2.13 CPU, triton 3.9; the load average is given per case).

Each case runs `fxlens minify` end to end (capture run of the script, confirming the failing graph,
reduction on a pool of 2 worker processes, and 3 re-runs of the reproducer: one in a new interpreter,
two forked from a process that had only imported torch), then gives the very graph fxlens captured
(its code and recorded inputs) to torch's own `torch._functorch.fx_minifier.minifier`, in-process,
with a `module_fails` that compiles with the same backend and compares the same failure signature
(`fxlens.minify.candidate_check.run_check`). With `--launcher`, the inductor case also runs torch's own
end-to-end route: the script under `TORCHDYNAMO_REPRO_AFTER=aot`, then the `minifier_launcher.py` it
writes. Final nodes are call nodes; input bytes are the reproducer's inputs (fxlens: seeded random
inputs of the final shapes; torch: the recorded tensors it keeps).
"""

PHASES = ("capture", "confirm", "aot_capture", "reduce", "of_which_verify")


def phase_table(rows: list[dict]) -> str:
    """Where fxlens's wall time went, per case (from its --json `timings`), with the load average."""
    head = (
        "| case | capture run | confirm | ATen capture | reduce | verify (3 re-runs) | total | load avg |\n"
        "|---|---|---|---|---|---|---|---|\n"
    )
    lines = []
    for row in rows:
        t = row["fxlens"]["timings"]
        cells = " | ".join(f"{t[k]:.1f}" if k in t else "-" for k in PHASES)
        lines.append(f"| {row['case']} | {cells} | {row['fxlens']['seconds']:.1f} | {row['load']} |")
        if row.get("fxlens_again"):
            t = row["fxlens_again"]["timings"]
            cells = " | ".join(f"{t[k]:.1f}" if k in t else "-" for k in PHASES)
            lines.append(
                f"| {row['case']} (after the launcher) | {cells} | {row['fxlens_again']['seconds']:.1f} | |"
            )
    return head + "\n".join(lines) + "\n"


def ratio_lines(rows: list[dict]) -> str:
    """fxlens against the launcher: wall time (fxlens ran before and after the launcher, so a load
    that changes during the launcher's long run weighs on both), CPU seconds, queries."""
    out = []
    for row in rows:
        ln = row.get("launcher") or {}
        if ln.get("seconds") and ln.get("queries"):
            runs = [row["fxlens"], *([row["fxlens_again"]] if row.get("fxlens_again") else [])]
            walls = " and ".join(f"{r['seconds']:.1f}" for r in runs)
            wall = sum(r["seconds"] for r in runs) / len(runs)
            cpu = sum(r["cpu"] for r in runs) / len(runs)
            q = row["fxlens"]["queries"]
            out.append(
                f"- {row['case']}: fxlens {walls} s (before and after the launcher; mean {wall:.1f} s) / "
                f"torch launcher {ln['seconds']:.1f} s = **{wall / ln['seconds']:.3f}x** wall time; CPU "
                f"seconds (all processes) {cpu:.1f} / {ln['cpu']:.1f} = **{cpu / ln['cpu']:.3f}x**; "
                f"queries {q} / {ln['queries']} = {q / ln['queries']:.2f}x (load average {row['load']}; "
                f"around the launcher {ln.get('load', '')})"
            )
    return "\n".join(out) + ("\n" if out else "")


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def table(rows: list[dict]) -> str:
    head = (
        "| case | original nodes | tool | queries | wall s | final nodes | input bytes |\n"
        "|---|---|---|---|---|---|---|\n"
    )
    lines = []
    for row in rows:
        r, t = row["fxlens"], row["torch"]
        lines.append(
            f"| {row['case']} ({row['what']}) | {r['original_nodes']} | fxlens minify, end to end "
            f"| {r['queries']} | {r['seconds']:.1f} | {r['final_nodes']} | {r['final_input_bytes']} |"
        )
        lines.append(f"| | | fxlens, reduction only | {r['queries']} | {r['timings']['reduce']:.1f} | | |")
        lines.append(
            f"| | | torch fx_minifier, in-process | {t['queries']} | {t['seconds']:.1f} "
            f"| {t['final_nodes']} | {t['input_bytes']} |"
        )
        if row.get("launcher"):
            ln = row["launcher"]
            lines.append(
                f"| | | torch repro_after=aot launcher, end to end | {ln.get('queries')} "
                f"| {ln.get('seconds', 0):.1f} | {ln.get('final_nodes')} | |"
            )
    return head + "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", default="relu_crash,relu_accuracy,fxlens_erf")
    ap.add_argument(
        "--launcher", action="store_true", help="also torch's repro_after=aot launcher (inductor)"
    )
    ap.add_argument("--write", action="store_true", help="write the section into BENCHMARKS.md")
    ap.add_argument("--notes", metavar="FILE", help="Markdown appended to the written section (analysis)")
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name in a.cases.split(","):
            load = _load()
            r = run_fxlens(name, work)
            t = run_torch_minifier(name, r)
            row = {"case": name, "what": CASES[name][3], "fxlens": r, "torch": t}
            if a.launcher and name == "inductor":
                before = _load()
                row["launcher"] = run_launcher(name, work)
                row["launcher"]["load"] = f"{before} -> {_load()}"
                row["fxlens_again"] = run_fxlens(name, work)  # the other side of the launcher's run
            row["load"] = f"{load} -> {_load()}"
            rows.append(row)
            print(
                json.dumps(
                    {
                        "case": name,
                        "fxlens": {
                            k: r[k]
                            for k in (
                                "original_nodes",
                                "final_nodes",
                                "queries",
                                "seconds",
                                "final_input_bytes",
                                "timings",
                            )
                        },
                        "torch": t,
                        "launcher": row.get("launcher"),
                        "fxlens_cpu": r.get("cpu"),
                        "fxlens_again": {
                            k: row["fxlens_again"][k] for k in ("seconds", "cpu", "queries", "timings")
                        }
                        if row.get("fxlens_again")
                        else None,
                    }
                ),
                flush=True,
            )
    text = (
        table(rows)
        + "\nWhere fxlens's end-to-end seconds went (its `--json` timings; load average 1/5/15 min "
        "before -> after the case):\n\n" + phase_table(rows)
    )
    if ratios := ratio_lines(rows):
        text += '\nAgainst torch\'s `repro_after="aot"` launcher, same script, same load:\n\n' + ratios
    print(text)
    if a.write:
        notes = Path(a.notes).read_text() if a.notes else ""
        write_section(
            "Minify", f"{METHOD.format(cases=a.cases, launcher=' --launcher' * a.launcher)}\n{text}\n{notes}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
