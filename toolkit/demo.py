"""`fxlens demo`: run the bundled examples through every capability, with real output.

Steps: capture and report (graph breaks, recompiles) of a small training loop compiled with the
fxlens backend (its Triton kernels included); bisect and minify a model whose compiled output is
wrong, and write its failing kernel as a standalone script with the real inputs of its launch;
doctor's eager-vs-compiled verdict; then the command that opens the session in the TUI.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
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
        choices=["run", "bisect", "minify", "kernel", "doctor"],
        action="append",
        help="run only these steps (repeatable)",
    )


@contextlib.contextmanager
def _injected(fault: str):
    """FXLENS_INJECT for the child runs of one step (bisect and minify read it in their children)."""
    old = os.environ.get("FXLENS_INJECT")
    os.environ["FXLENS_INJECT"] = fault
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("FXLENS_INJECT", None)
        else:
            os.environ["FXLENS_INJECT"] = old


def _title(n: int, text: str) -> None:
    print(f"\n{'=' * 78}\n[{n}] {text}\n{'=' * 78}", flush=True)


def step_run(backend: str) -> Path:
    from fxlens.capture.command import run_captured
    from fxlens.report.build import build_report
    from fxlens.report.text import render_text
    from fxlens.trace.session import Session

    print(f"$ fxlens run --backend {backend} {DEMO_MODEL.name}", flush=True)
    result = run_captured(str(DEMO_MODEL), [], backend=backend)
    report = build_report(Session.open(result.session_dir), with_guards=False)
    sys.stdout.write(render_text(report))
    return result.session_dir


def step_bisect() -> None:
    from fxlens.bisect.command import bisect_script, render_text

    print(f"$ FXLENS_INJECT={DEMO_FAULT} fxlens bisect --check accuracy {DEMO_FAILING.name}", flush=True)
    print(render_text(bisect_script(str(DEMO_FAILING), [], backend="fxlens", check="accuracy")))


def step_minify() -> None:
    from fxlens.minify.command import minify_script, summary_line

    out_dir = Path(config.load().sessions_dir) / "repros"
    print(
        f"$ FXLENS_INJECT={DEMO_FAULT} fxlens minify --check accuracy --out {out_dir}/ {DEMO_FAILING.name}",
        flush=True,
    )
    result = minify_script(str(DEMO_FAILING), [], backend="fxlens", check="accuracy", out_dir=str(out_dir))
    print(summary_line(result))
    repro = Path(result["repro"])
    if repro.is_file():
        # the model and inputs; the check harness embedded below them is the same in every reproducer
        text = repro.read_text().split("# --- the check fxlens minify ran")[0].rstrip()
        print(f"\n--- {repro} (head) ---\n{text}\n...")


def step_kernel() -> None:
    from fxlens.minify.kernel import minify_kernel, run_without_fxlens

    out_dir = Path(config.load().sessions_dir) / "repros"
    print(
        f"$ FXLENS_INJECT={DEMO_FAULT} fxlens minify --kernel --out {out_dir}/ {DEMO_FAILING.name}",
        flush=True,
    )
    r = minify_kernel(str(DEMO_FAILING), [], backend="fxlens", out_dir=str(out_dir))
    print(f"fxlens minify --kernel: {r['summary']}")
    repro = Path(r["repro"])
    text = repro.read_text()
    # the header and the kernel, then eager's fp64 computation of its nodes (the helpers between
    # them are the same in every kernel reproducer)
    head = text.split("\ndef _snap(")[0].rstrip()
    ref = "def reference(" + text.split("\ndef reference(")[1].split("\nKERNEL_NAME = ")[0].rstrip()
    print(f"\n--- {repro} (head) ---\n{head}\n...\n{ref}\n...")
    print(f"\n$ python {repro}   # a fresh interpreter where fxlens cannot be imported", flush=True)
    code, out = run_without_fxlens(repro)
    print(out.rstrip())
    print(f"(exit {code})")


def step_doctor() -> None:
    from fxlens.doctor.command import doctor_script, render_text

    print(f"$ fxlens doctor {DEMO_MODEL.name}", flush=True)
    print(render_text(doctor_script(str(DEMO_MODEL), [])))


def main(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    only = set(args.only or ["run", "bisect", "minify", "kernel", "doctor"])
    session = None
    took: list[str] = []  # each step's seconds, said at the end: where a demo's time goes

    def step(name: str, title: str, run, fault: str | None = None):
        _title(len(took) + 1, title)
        start = time.perf_counter()
        with _injected(fault) if fault else contextlib.nullcontext():
            out = run()
        took.append(f"{name} {time.perf_counter() - start:.0f} s")
        return out

    if "run" in only:
        title = "What did torch.compile do? Graphs, graph breaks, recompiles, kernels"
        session = step("run", title, lambda: step_run(args.backend))
    if "bisect" in only:
        title = "Whose fault is a wrong result? Bisect the backend ladder to a stage, graph and kernel"
        step("bisect", title, step_bisect, DEMO_FAULT)
    if "minify" in only:
        step("minify", "A reproducer for the bug report: minify the failing graph", step_minify, DEMO_FAULT)
    if "kernel" in only:
        title = "A reproducer for the kernel author: the failing kernel alone, with its real inputs"
        step("kernel", title, step_kernel, DEMO_FAULT)
    if "doctor" in only:
        step("doctor", "Does compiling help at all? Eager vs compiled, side by side", step_doctor)
    print(f"\nfxlens demo finished in {time.perf_counter() - t0:.0f} s ({', '.join(took)}).")
    if session is not None:
        print(f"Browse everything it captured:  fxlens tui {shlex.quote(str(session))}")
    return 0
