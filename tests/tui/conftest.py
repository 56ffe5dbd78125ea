"""Fixtures for the TUI tests: real TORCH_TRACE logs, made once per test session.

`model_script.py` runs twice under TORCH_TRACE (the second run compiles once more, as a diverging
second rank would). From those logs: a session with bisect/minify events, a two-rank trace
directory, and a truncated, partly corrupt copy.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from fxlens.trace.session import append_event, write_info

# tests/ranks/rank_replicas.py grows the committed traces into many-rank jobs
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ranks"))

HERE = Path(__file__).parent


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """Run `async def` tests with asyncio.run (the dev extra has no async plugin)."""
    if inspect.iscoroutinefunction(pyfuncitem.obj):
        args = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
        asyncio.run(pyfuncitem.obj(**args))
        return True
    return None


@pytest.fixture(autouse=True)
def no_error_toasts(monkeypatch):
    """Fail a TUI test on any error notification: `viewbase.guarded` turns a view's exception into a
    toast so the app survives, which would otherwise let a broken view pass its test."""
    from textual.app import App

    errors: list[str] = []
    notify = App.notify

    def recording_notify(self, message, *args, **kwargs):
        if kwargs.get("severity") == "error":
            errors.append(str(message))
        return notify(self, message, *args, **kwargs)

    monkeypatch.setattr(App, "notify", recording_notify)
    yield errors
    assert errors == [], f"error toast(s) shown: {errors}"


@dataclass
class Traces:
    """Paths of the fixture data (cwd-relative paths in the UI are relative to `root`)."""

    root: Path
    session: Path  # an fxlens session: one log + bisect and minify events
    multi: Path  # a TORCH_TRACE dir with rank_0 and rank_1 logs that diverge
    corrupt: Path  # one log, truncated mid-record, with a garbage line
    repro: Path  # the minified reproducer the minify event points to
    bisect: Path  # a bisect session: no trace of its own, two child runs under runs/ with theirs


def _run(script: Path, trace: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "TORCH_TRACE": str(trace), "PYTHONUNBUFFERED": "1"}
    env.pop("FXLENS_BACKEND_OVERRIDE", None)
    return subprocess.Popen(
        [sys.executable, script.name, *args],
        cwd=script.parent,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture(scope="session")
def traces(build_once) -> Traces:
    root = build_once("tui", _build)
    names = ("session", "multi", "corrupt", "repro_min.py", "bisect")
    return Traces(root, *(root / n for n in names))


def _build(root: Path) -> None:
    script = root / "model.py"
    shutil.copy(HERE / "model_script.py", script)
    procs = [_run(script, root / "run0"), _run(script, root / "run1", "diverge")]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-2000:]
    (log0,) = sorted((root / "run0").glob("*.log"))
    (log1,) = sorted((root / "run1").glob("*.log"))

    session = root / "session"
    (session / "trace").mkdir(parents=True)
    shutil.copy(log0, session / "trace" / log0.name)
    write_info(session, {"script": str(script), "argv": [], "backend": "fxlens", "exit_code": 0})
    repro = root / "repro_min.py"
    repro.write_text("import torch\n\n\ndef repro(x):\n    return torch.relu(x) * 2.0\n")
    append_event(
        session,
        "bisect",
        {
            "first_failing_stage": "fxlens",
            "check": "accuracy",
            "runs": 4,
            "culprit": {
                "compile_id": "0/0",
                "function": "f",
                "file": str(script),
                "line": 56,
                "kernel": "fxlens_k0_relu_mul",
                "ops": ["aten.relu.default", "aten.mul.Tensor"],
            },
            "stages": [
                {"stage": "fxlens_eager", "ok": True},
                {"stage": "fxlens_aot_eager", "ok": True},
                {"stage": "fxlens_nofusion", "ok": True},
                {"stage": "fxlens", "ok": False, "error": "max abs error 0.5"},
            ],
            "summary": "first failing stage fxlens: kernel fxlens_k0_relu_mul in f (model.py:56)",
        },
    )
    append_event(
        session,
        "minify",
        {
            "repro": str(repro),
            "check": "accuracy",
            "signature": "accuracy:aten.relu",
            "original_nodes": 6,
            "final_nodes": 2,
            "queries": 9,
            "seconds": 3.2,
            "summary": "6 -> 2 nodes in 9 queries: repro_min.py",
        },
    )

    multi = root / "multi"
    multi.mkdir()
    shutil.copy(log0, multi / "dedicated_log_torch_trace_rank_0_a.log")
    shutil.copy(log1, multi / "dedicated_log_torch_trace_rank_1_b.log")

    corrupt = root / "corrupt"
    corrupt.mkdir()
    data = log0.read_bytes()
    cut = data[: int(len(data) * 0.7)]
    lines = cut.split(b"\n")
    lines.insert(len(lines) // 3, b"this line is not a trace record {{{")
    (corrupt / "dedicated_log_torch_trace_cut.log").write_bytes(b"\n".join(lines))
    # laid out as fxlens bisect lays out its session (toolkit/bisect_run.py: runs/<n>-<label>)
    bisect = root / "bisect"
    bisect.mkdir()
    write_info(bisect, {"script": str(script), "argv": [], "command": "bisect", "exit_code": 0})
    for n, (label, log) in enumerate((("fxlens_eager", log0), ("fxlens", log1)), 1):
        run = bisect / "runs" / f"{n:02d}-{label}"
        (run / "trace").mkdir(parents=True)
        shutil.copy(log, run / "trace" / log.name)
        write_info(run, {"script": str(script), "argv": [], "backend": label, "exit_code": n - 1})
    append_event(
        bisect,
        "bisect",
        {
            "first_failing_stage": "fxlens",
            "check": "crash",
            "runs": 2,
            "culprit": {"compile_id": "1/1", "function": "f", "file": str(script), "line": 60},
            "stages": [{"stage": "fxlens_eager", "ok": True}, {"stage": "fxlens", "ok": False}],
            "summary": "first failing stage fxlens: compile 1/1 in f",
        },
    )


@pytest.fixture
def in_root(traces, monkeypatch, tmp_path):
    """cwd = the fixture root (so shown paths are `model.py:57`); sessions dir = tmp_path."""
    monkeypatch.chdir(traces.root)
    monkeypatch.setenv("FXLENS_SESSIONS_DIR", str(tmp_path / "sessions"))
    return traces


@pytest.fixture(scope="session")
def job_16(build_once) -> Path:
    """16 ranks of the real gloo trace (tests/data/ranks), rank 9 recompiles on its short batch (the
    dir is named `trace`: the title shows it)."""
    from rank_replicas import replicate

    return build_once("ranks-16", lambda d: replicate(d / "trace", 16, (9,))) / "trace"


@pytest.fixture(scope="session")
def inductor_16(build_once) -> Path:
    """16 ranks of the real inductor trace (tests/data/inductor); rank 9's inductor wrote other code."""
    from rank_replicas import inductor_log, replicate_logs

    def build(d: Path) -> None:
        replicate_logs(d / "trace", 16, inductor_log("fused"), inductor_log("scalar"), (9,))

    return build_once("tui-inductor-16", build) / "trace"
