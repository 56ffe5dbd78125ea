"""Fixtures shared by every test folder."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from filelock import FileLock  # a dependency of torch's


def pytest_configure(config):
    """Tests of Ctrl-C send SIGINT to fxlens and to the scripts it runs. A test run started in the
    background of a shell without job control (`.ci/run &`) inherits SIGINT ignored, and every
    child it starts then ignores it too, as Python does: those tests would measure the launcher,
    not fxlens. Handled here, SIGINT is back to its default in every child (exec resets handlers,
    never an ignore)."""
    import signal

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def build_once(tmp_path_factory) -> Callable[[str, Callable[[Path], None]], Path]:
    """`build_once(name, build)`: a folder that `build(folder)` filled once per test run.

    Under `-n 2` each worker has its own session-scoped fixtures, so an expensive capture (a real
    script under TORCH_TRACE) ran once per worker; here the first worker to ask builds it under a
    file lock in the run's shared temp folder, the other waits for it and reuses it. Tests must
    treat the folder as read-only (copy it to mutate it).
    """
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # .../pytest-N/popen-gwI -> .../pytest-N, shared by the workers

    def build(name: str, fill: Callable[[Path], None]) -> Path:
        dest = base / f"shared-{name}"
        with FileLock(str(dest) + ".lock"):
            if not (dest / ".built").exists():
                shutil.rmtree(dest, ignore_errors=True)  # a build that failed half-way
                dest.mkdir()
                fill(dest)
                (dest / ".built").touch()
        return dest

    return build


def _skip_dynamo_bookkeeping() -> None:
    """Two things torch 2.13 does on every compile that no test here reads, skipped in the test
    processes only (fxlens's subprocesses, the user's runs, keep torch's defaults):

    - the guard-latency probe: it flushes the CPU cache before timing the new guards once, ~28 ms
      a compile on this 2-core box (15% of tests/backend/test_ops.py's time); it only feeds the
      `guard_latency_us` compilation metric;
    - a gc.collect(1) after each compile (`run_gc_after_compile`), ~5 ms.
    FXLENS_TEST_TORCH_DEFAULTS=1 keeps both, to measure what they cost.
    """
    if os.environ.get("FXLENS_TEST_TORCH_DEFAULTS") == "1":
        return
    import torch._dynamo.config
    import torch._dynamo.guards

    torch._dynamo.guards.profile_guard_manager = lambda *args, **kwargs: 0.0
    torch._dynamo.config.run_gc_after_compile = False


_skip_dynamo_bookkeeping()

# doctor's interleaved timing spans at least 10 s a function by default before it may stop (a process
# state can hold for seconds: fxlens.probe.interleave.MIN_SPAN_S); the tests' scripts hold one
# speed, and 10 s for every doctor run would add minutes to the suite. Tests of the span itself pass
# `min_span_s` to `measure` directly.
os.environ.setdefault("FXLENS_DOCTOR_MIN_SPAN", "1")


@pytest.fixture
def cli_in_process(capsys):
    """`cli_in_process(*args)` -> (exit status, stdout, stderr) of the CLI's `main` in this process:
    for a refusal that imports torch before it refuses (a backend's or a config switch's name), the
    test process has torch already, where a new interpreter would import it again for one line. An
    exception escaping `main` (an fxlens traceback) fails the test, as the traceback would."""
    from fxlens.cli import main

    def run(*args) -> tuple[int, str, str]:
        capsys.readouterr()
        rc = main([str(a) for a in args])
        out = capsys.readouterr()
        return rc, out.out, out.err

    return run


@pytest.fixture
def blocks_trace(build_once) -> tuple[Path, str]:
    """(TORCH_TRACE dir, stdout) of tests/report/scripts/repeated_blocks.py, run once per test run:
    a model whose graph inlines N instances of one block class (it prints `blocks N CLASS`). Read by
    the report's repeated-blocks tests and by the TUI's Metrics view test."""
    import subprocess
    import sys

    script = Path(__file__).parent / "report" / "scripts" / "repeated_blocks.py"

    def build(root: Path) -> None:
        env = {**os.environ, "TORCH_TRACE": str(root / "trace")}
        proc = subprocess.run(
            [sys.executable, str(script)], cwd=root, env=env, capture_output=True, text=True, timeout=600
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        (root / "stdout.txt").write_text(proc.stdout)

    root = build_once("repeated-blocks", build)
    return root / "trace", (root / "stdout.txt").read_text()


@pytest.fixture(autouse=True)
def _cwd_restored():
    """Every test ends in the directory it started in: a test that changes directory and never comes
    back would make later tests in its xdist worker resolve relative paths elsewhere (a status line
    then named `tmp/record/x.py` instead of `x.py`, failing only in some test orders)."""
    home = os.getcwd()
    yield
    if os.getcwd() != home:
        os.chdir(home)


def pytest_runtest_logreport(report):
    """FXLENS_TEST_DURATIONS=FILE appends `seconds<TAB>phase<TAB>test id` for every phase as it
    ends (each xdist worker appends its own lines): a run cut short by a timeout, or by load, still
    leaves its per-test times, where `--durations` prints them only at the end of a run that ends."""
    path = os.environ.get("FXLENS_TEST_DURATIONS")
    if path and getattr(report, "node", None) is None:  # not the xdist controller's copy of a report
        with open(path, "a") as f:
            f.write(f"{report.duration:.2f}\t{report.when}\t{report.nodeid}\n")
