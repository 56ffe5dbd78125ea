"""`fxlens demo`: run the bundled examples through every capability, with real output.

Steps: capture and report (graph breaks, recompiles) of a small training loop compiled with the
fxlens backend (its Triton kernels included); bisect and minify a model whose compiled output is
wrong, and write its failing kernel as a standalone script with the real inputs of its launch;
doctor's eager-vs-compiled verdict; then the command that opens the session in the TUI.

The steps before doctor are independent processes, so on two cores or more they run two at a time
in child demos (`fxlens demo --only STEP`) and their output is printed in order; doctor, which
times eager against compiled, runs alone after them.
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
    from fxlens.bisect.command import bisect_script
    from fxlens.bisect.verdict import render_text

    print(f"$ FXLENS_INJECT={DEMO_FAULT} fxlens bisect --check accuracy {DEMO_FAILING.name}", flush=True)
    print(render_text(bisect_script(str(DEMO_FAILING), [], backend="fxlens", check="accuracy")))


def step_minify() -> None:
    from fxlens.minify.command import minify_script
    from fxlens.minify.pipeline import summary_line

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
    from fxlens.doctor.command import doctor_script
    from fxlens.report.doctor_text import render_text

    print(f"$ fxlens doctor {DEMO_MODEL.name}", flush=True)
    print(render_text(doctor_script(str(DEMO_MODEL), [])))


# the steps before doctor's are independent processes: they run side by side, two at a time, in
# child demos (their output printed in order); doctor's timing runs alone, after them
_CHILD = "FXLENS_DEMO_CHILD"
_SESSION_MARK = "fxlens-demo-session: "
_TOOK_MARK = "fxlens-demo-took: "
_TITLES = {
    "run": "What did torch.compile do? Graphs, graph breaks, recompiles, kernels",
    "bisect": "Whose fault is a wrong result? Bisect the backend ladder to a stage, graph and kernel",
    "minify": "A reproducer for the bug report: minify the failing graph",
    "kernel": "A reproducer for the kernel author: the failing kernel alone, with its real inputs",
    "doctor": "Does compiling help at all? Eager vs compiled, side by side",
}
_ORDER = ("run", "bisect", "minify", "kernel", "doctor")


def _body(name: str, backend: str):
    """The step's own work (its title printed by the caller); the run step returns its session."""
    fault = None if name in ("run", "doctor") else DEMO_FAULT
    run = {
        "run": lambda: step_run(backend),
        "bisect": step_bisect,
        "minify": step_minify,
        "kernel": step_kernel,
        "doctor": step_doctor,
    }[name]
    with _injected(fault) if fault else contextlib.nullcontext():
        return run()


def _side_by_side(names: list[str], backend: str, took: list[str]):
    """Run NAMES in child demos, at most two at once; print each one's output in order as soon as
    it and those before it are done. Returns the run step's session, if it ran."""
    import subprocess
    import tempfile

    session = None
    env = {**os.environ, _CHILD: "1"}
    with tempfile.TemporaryDirectory(prefix="fxlens-demo-") as tmp:
        procs: dict[str, tuple] = {}

        def start(name: str) -> None:
            out = open(Path(tmp) / name, "w+")  # noqa: SIM115 -- closed when printed
            cmd = [sys.executable, "-m", "fxlens.cli", "demo", "--backend", backend, "--only", name]
            procs[name] = (subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env), out)

        for name in names[:2]:
            start(name)
        for k, name in enumerate(names):
            proc, out = procs[name]
            proc.wait()
            if k + 2 < len(names):
                start(names[k + 2])
            _title(k + 1, _TITLES[name])
            out.seek(0)
            for line in out:
                if line.startswith(_SESSION_MARK):
                    session = Path(line[len(_SESSION_MARK) :].strip())
                elif line.startswith(_TOOK_MARK):
                    took.append(f"{name} {float(line[len(_TOOK_MARK) :]):.0f} s")
                else:
                    sys.stdout.write(line)
            out.close()
            sys.stdout.flush()
            if proc.returncode:
                for other, _ in procs.values():
                    if other.poll() is None:
                        other.kill()
                        other.wait()
                sys.exit(f"fxlens demo: the {name} step failed (exit {proc.returncode})")
    return session


def main(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    only = [n for n in _ORDER if n in set(args.only or _ORDER)]
    child = os.environ.pop(_CHILD, None) is not None
    session = None
    took: list[str] = []  # each step's seconds, said at the end: where a demo's time goes
    early = [n for n in only if n != "doctor"]
    side = len(early) > 1 and (os.cpu_count() or 1) >= 2 and not child
    if side:
        session = _side_by_side(early, args.backend, took)
        only = [n for n in only if n == "doctor"]
    for name in only:
        if not child:
            _title(len(took) + 1, _TITLES[name])
        start = time.perf_counter()
        out = _body(name, args.backend)
        took.append(f"{name} {time.perf_counter() - start:.0f} s")
        if name == "run":
            session = out
    if child:
        print(f"{_TOOK_MARK}{time.perf_counter() - t0:.3f}")
        if session is not None:
            print(f"{_SESSION_MARK}{session}")
        return 0
    how = " (the steps before doctor two at a time, side by side)" if side else ""
    print(f"\nfxlens demo finished in {time.perf_counter() - t0:.0f} s ({', '.join(took)}){how}.")
    if session is not None:
        print(f"Browse everything it captured:  fxlens tui {shlex.quote(str(session))}")
    return 0
