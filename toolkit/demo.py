"""`fxlens demo`: run the bundled examples through every capability, with real output.

Steps: capture and report (graph breaks, recompiles) of a small training loop compiled with the
fxlens backend (its Triton kernels included); bisect and minify a model whose compiled output is
wrong; doctor's eager-vs-compiled verdict; then the command that opens the session in the TUI.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from fxlens import config

EXAMPLES = Path(__file__).resolve().parent / "examples"
DEMO_MODEL = EXAMPLES / "demo_model.py"
DEMO_FAILING = EXAMPLES / "demo_failing.py"
# the fault the failing example carries: fxlens's backend corrupts the kernel computing aten.erf
DEMO_FAULT = "accuracy:aten.erf"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--backend",
        default="fxlens",
        metavar="NAME",
        help="backend for the capture step (default: fxlens, fxlens's own Triton backend)",
    )
    parser.add_argument(
        "--only",
        choices=["run", "bisect", "minify", "doctor"],
        action="append",
        help="run only these steps (repeatable)",
    )


def _title(n: int, text: str) -> None:
    print(f"\n{'=' * 78}\n[{n}] {text}\n{'=' * 78}", flush=True)


def step_run(backend: str) -> Path:
    from fxlens.capture import run_captured
    from fxlens.report import build_report, render_text
    from fxlens.session import Session

    print(f"$ fxlens run {DEMO_MODEL.name} --backend {backend}", flush=True)
    result = run_captured(str(DEMO_MODEL), [], backend=backend)
    report = build_report(Session.open(result.session_dir), with_guards=False)
    sys.stdout.write(render_text(report))
    return result.session_dir


def step_bisect(env: dict) -> None:
    from fxlens.bisect import bisect_script, render_verdict

    print(f"$ FXLENS_INJECT={DEMO_FAULT} fxlens bisect {DEMO_FAILING.name}", flush=True)
    result = bisect_script(str(DEMO_FAILING), [], backend="fxlens", check="auto", env=env)
    print(render_verdict(result))


def step_minify(env: dict) -> None:
    from fxlens.minify import minify_script, render_result

    print(f"$ FXLENS_INJECT={DEMO_FAULT} fxlens minify {DEMO_FAILING.name}", flush=True)
    out_dir = Path(config.load().sessions_dir) / "repros"
    result = minify_script(
        str(DEMO_FAILING), [], backend="fxlens", check="auto", out_dir=str(out_dir), env=env
    )
    print(render_result(result))


def step_doctor() -> None:
    from fxlens.doctor import doctor_script, render_doctor

    print(f"$ fxlens doctor {DEMO_MODEL.name} --backend inductor", flush=True)
    print(render_doctor(doctor_script(str(DEMO_MODEL), [], backend="inductor")))


def main(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    only = set(args.only or ["run", "bisect", "minify", "doctor"])
    fault_env = {**os.environ, "FXLENS_INJECT": DEMO_FAULT}
    session = None
    n = 0
    if "run" in only:
        n += 1
        _title(n, "What did torch.compile do? Graphs, graph breaks, recompiles, kernels")
        session = step_run(args.backend)
    if "bisect" in only:
        n += 1
        _title(n, "Whose fault is a wrong result? Bisect the backend ladder to a stage, graph and kernel")
        step_bisect(fault_env)
    if "minify" in only:
        n += 1
        _title(n, "A reproducer for the bug report: minify the failing graph")
        step_minify(fault_env)
    if "doctor" in only:
        n += 1
        _title(n, "Does compiling help at all? Eager vs compiled, side by side")
        step_doctor()
    print(f"\nfxlens demo finished in {time.perf_counter() - t0:.0f} s.")
    if session is not None:
        print(f"Browse everything it captured:  fxlens tui {session}")
    return 0
