"""The script runs of `fxlens minify`: the capture child, what each torch.compile call asked for,
and the one-line refusal when nothing fails (split out of minify.command)."""

from __future__ import annotations

import json
import re
import shutil
import threading
from pathlib import Path

from fxlens import config
from fxlens.capture.command import refused_message, run_captured
from fxlens.capture.runner import REFUSED
from fxlens.errors import FxlensError
from fxlens.trace.session import Session


def last_error_line(text: str) -> str:
    """The last `SomeError: message` line of a traceback (torch appends hints after it)."""
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip() and not ln.startswith((" ", "\t"))]
    errors = [ln for ln in lines if re.match(r"^[\w.]*(Error|Exception|Interrupt|Exit)\b", ln)]
    return (errors or lines or [""])[-1][:200]


def _run_child(script, script_args, backend, folder: Path, env: dict | None = None, timeout=None):
    """run_captured into `folder`, without torch's structured trace (nothing here reads it);
    (exit code, the child's stderr text)."""
    (folder / "output").mkdir(parents=True, exist_ok=True)
    result = run_captured(
        script,
        script_args,
        backend=backend,
        session_dir=str(folder),
        env=env,
        stdout=folder / "output" / "stdout.txt",
        stderr=folder / "output" / "stderr.txt",
        timeout=timeout,
        trace=False,
    )
    if result.exit_code == REFUSED and (msg := refused_message(Session.open(folder))):
        raise FxlensError(msg)
    return result.exit_code, (folder / "output" / "stderr.txt").read_text(errors="replace")


def capture_failing_run(script, script_args, backend, check, session: Path, timeout: float | None = None):
    """Run the script once under the capturing backend; (capture dir, exit code, stderr)."""
    from fxlens.minify.capture import CAPTURE_SPEC, captured_graphs

    cap = session / "capture"
    cap.mkdir(parents=True, exist_ok=True)
    env = {
        config.ENV_MINIFY_CAPTURE_DIR: str(cap.resolve()),
        config.ENV_MINIFY_BACKEND: backend or "",
        config.ENV_MINIFY_CHECK: check,
        # a script comparing a backend with `eager`/`aot_eager` keeps those reference calls as they
        # are when --backend replaces the others (without it, every call keeps its own backend)
        config.ENV_OVERRIDE_KEEP: ",".join(b for b in config.REFERENCE_BACKENDS if b != backend)
        if backend
        else "",
    }
    child = session / "children" / "capture"
    code, stderr = _run_child(script, script_args, CAPTURE_SPEC, child, env, timeout)
    asked = _asked(child)
    if backend and not captured_graphs(cap) and asked and all(b in config.REFERENCE_BACKENDS for b in asked):
        # the script compiles only with references: they are what --backend replaces
        env[config.ENV_OVERRIDE_KEEP] = ""
        shutil.rmtree(child, ignore_errors=True)
        code, stderr = _run_child(script, script_args, CAPTURE_SPEC, child, env, timeout)
    return cap, code, stderr


def _asked(child: Path) -> list[str]:
    """The backends the script's torch.compile calls asked for, in order (the runner records them)."""
    events = Session.open(child).events if (child / "events.jsonl").exists() else []
    asked = [str(e.get("backend")) for e in events if e.get("event") == "compile_call"]
    return list(dict.fromkeys(b for b in asked if b and not b.startswith("fxlens.minify.capture")))


def reference_backend(child: Path, failing_backend: str) -> str:
    """The reference a comparing script checked `failing_backend` against, or "" (none)."""
    if failing_backend in config.REFERENCE_BACKENDS:
        return ""
    return next((b for b in _asked(child) if b in config.REFERENCE_BACKENDS), "")


def first_backend(cap: Path, done: threading.Event) -> str | None:
    """The backend spec of the first graph the capture child compiles (polled while it runs)."""
    from fxlens.minify.capture import read_status

    while not done.wait(0.2):
        first = next((r for r in read_status(cap) if r.get("step") == "compile"), None)
        if first is not None:
            return json.loads((cap / f"graph_{first['graph']}.json").read_text())["backend"]
    return None


def no_failure_error(
    script,
    script_args,
    session: Path,
    exit_code: int,
    stderr: str,
    graphs: list[int],
    backend_desc: str,
    check: str,
) -> FxlensError:
    """The one-line reason there is nothing to minify (does not fail / fails in eager / outside)."""
    if exit_code == 0:
        what = "ran to completion" + (" and every compiled graph matched eager" if check != "crash" else "")
        return FxlensError(f"{script} does not fail with backend {backend_desc}: it {what}")
    last = last_error_line(stderr)
    compiled_any = graphs or any(
        e.get("event") == "compile_call" for e in Session.open(session / "children" / "capture").events
    )
    if not compiled_any:
        why = f": {last}" if last else " (it printed no error)"
        return FxlensError(f"{script} fails before compiling anything (exit status {exit_code}){why}")
    eager_code, _ = _run_child(script, script_args, "eager", session / "children" / "eager")
    if eager_code != 0:
        return FxlensError(f"{script} fails already in eager (backend 'eager'), not in the compiler: {last}")
    if check == "crash":
        why = "no compiled graph raised; if the script checks the compiled outputs, try --check accuracy"
    else:
        # the script's own check is stricter than minify's accuracy rule, or compares something
        # else (a sign at a singularity, where eager is as far from fp64 as compiled code)
        why = "no compiled graph raised or diverged from fp64 more than eager does (docs/guides/bisect.md: the accuracy rule)"
        if check != "eager-diff":
            why += "; if the script compares with eager's output (assert_close), try --check eager-diff"
    return FxlensError(f"{script} fails outside the compiled graphs (exit status {exit_code}: {last}): {why}")
