"""`fxlens minify --kernel SCRIPT`: the failing kernel as a standalone script with its real inputs.

1. Run SCRIPT once in a child with a launch catcher (`fxlens.minify.kernel_capture` for fxlens's
   own Triton kernels, `fxlens.minify.kernel_inductor` for inductor's): the first launch whose
   result differs from eager's fp64 computation of the kernel's ATen nodes (or that raises), of
   the kernel `--kernel-name` names or of any kernel, is shrunk and written as a reproducer.
2. Copy it to its place (default repro_cases/kernel_<kernel>.py, its tensors beside it as .pt).
3. Run it in a fresh interpreter where fxlens cannot be imported: it must fail the same way.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

from fxlens import config
from fxlens.errors import FxlensError

SIGNATURE_PREFIX = "fxlens-signature: "  # kernel_writer's (imported lazily: it imports torch)

# `python FILE` where fxlens cannot be imported, as on a kernel author's machine: any import of it
# raises ImportError (sys.modules[...] = None), and -I drops PYTHONPATH, the user site and the
# script's environment switches
WITHOUT_FXLENS = (
    "import runpy, sys; sys.modules['fxlens'] = None; p = sys.argv[1]; sys.argv = sys.argv[1:]; "
    "runpy.run_path(p, run_name='__main__')"
)
HOOKS = "fxlens.minify.kernel_capture:install"


def run_without_fxlens(path: str | os.PathLike, timeout: float = 300, args=()) -> tuple[int, str]:
    """Run a reproducer with `python -I` and fxlens blocked: (exit status, its stdout and stderr)."""
    path = Path(path).resolve()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FXLENS_", "TORCH_TRACE", "PYTHON"))}
    env.pop("TRITON_INTERPRET", None)  # the script chooses it (CPU: interpreter; CUDA: compiled)
    try:
        proc = subprocess.run(
            [sys.executable, "-I", "-c", WITHOUT_FXLENS, str(path), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            cwd=path.parent,
        )
    except subprocess.TimeoutExpired:
        return 124, "timeout"
    return proc.returncode, proc.stdout + proc.stderr


def same_failure(code: int, stderr: str, status: dict) -> bool:
    """Whether a reproducer's run failed as the launch did: the accuracy signature at the same op,
    or the same exception type (the signature line the script prints before re-raising)."""
    if code == 0:
        return False
    sig = next((ln for ln in reversed(stderr.splitlines()) if ln.startswith(SIGNATURE_PREFIX)), "")
    if status.get("crash"):  # killed by the same signal, in the launch (said just before it)
        return code == status["crash"]["exit"] and sig.startswith(f"{SIGNATURE_PREFIX}crash: ")
    if status.get("error"):
        return sig == f"{SIGNATURE_PREFIX}raise: {status['error'].split(':', 1)[0].split('.')[-1]}"
    op = (status.get("failure") or {}).get("op") or ""
    return sig.startswith(SIGNATURE_PREFIX + "accuracy:") and (not op or sig.endswith(f"({op})"))


def _default_out(cfg_dir: Path, kernel: str) -> Path:
    return cfg_dir / f"kernel_{kernel}.py"


def minify_kernel(
    script: str,
    script_args: list[str] | None = None,
    backend: str | None = None,
    kernel: str | None = None,
    out: str | None = None,
    *,
    out_dir: str | None = None,
    json_path: str | None = None,
    timeout: float | None = None,
    verify: bool = True,
) -> dict:
    """Write the failing kernel of SCRIPT's compiled run as a standalone reproducer.

    Args:
        script: the user's script (run as `__main__` in a child process).
        script_args: its arguments.
        backend: the backend to run it with (default: the script's own); fxlens's backends and
            inductor are understood.
        kernel: the kernel to catch (`fxk_forward_0_erf`, `cpp_fused_relu_0`); None: the first
            kernel whose launch fails.
        out: reproducer path; None: `kernel_<name>.py` in `out_dir` (default repro_cases/).
        json_path: also write the result there.
        timeout: seconds the script's run may take.
        verify: run the reproducer where fxlens cannot be imported.

    Returns:
        {repro, inputs, kernel, backend, graph, compile_id, ops, user_line, check, failure, error,
        launch, shrunk, reproduced, seconds, session, summary}.

    Raises:
        FxlensError: bad input, or no launch fails (one line, with the reason).
    """
    script_args = list(script_args or [])
    _check(script, out, backend, json_path)
    t0 = time.perf_counter()
    from fxlens.trace.session import new_session_dir

    session = new_session_dir(config.load().sessions_dir, script)
    status, code = _catch(script, script_args, backend, kernel, session, timeout)
    if not status.get("found") and code is not None and code < 0 and status.get("inflight"):
        status = _catch_crash(script, script_args, backend, session, timeout, status, code)
    if not status.get("found"):
        raise FxlensError(_why_none(status, kernel, code, session / "script.log"))
    path = _place(
        session / ("kernel_crash" if status.get("crash") else "kernel"), status["kernel"], out, out_dir
    )
    reproduced = _verify(path, status, session) if verify else None
    result = _result(status, path, backend, reproduced, time.perf_counter() - t0, session)
    from fxlens.trace.session import append_event

    append_event(session, "minify", result)  # `fxlens report SESSION` shows it as minify's verdict
    if json_path:
        from fxlens.report.outputs import write_json

        write_json(result, json_path)
    return result


def _verify(path: Path, status: dict, session: Path) -> str:
    """Run the reproducer where fxlens cannot be imported: "1/1" when it fails as the launch did."""
    code, stderr = run_without_fxlens(path)
    ok = same_failure(code, stderr, status)
    (session / "repro_run.log").write_text(stderr)
    if ok:  # the outcome it showed, as the corpus test reads it (tests/minify/test_corpus.py)
        _promise(path, code, stderr, slow=status.get("backend") == "inductor")
    return f"{int(ok)}/1"


def _check(script: str, out: str | None, backend: str | None, json_path: str | None) -> None:
    """Refuse bad input before anything runs (one line each), as `fxlens minify` does."""
    from fxlens.capture.backends import check_spec
    from fxlens.capture.command import check_script
    from fxlens.report.outputs import check_writable

    check_script(script)
    check_writable(json_path)
    if out:
        if os.path.lexists(out):
            raise FxlensError(f"--out {out}: already exists; remove it or choose another name")
        check_writable(out, "--out")
    if backend:
        check_spec(backend)


def _catch_crash(script, script_args, backend, session: Path, timeout, first: dict, code: int) -> dict:
    """The launch in flight when a signal ended the script: run it again, writing that launch
    before it runs. Its status, with `crash` (the signal) when the rerun ended the same way."""
    from fxlens.minify.repro_writer import signal_signature

    at = first["inflight"]
    status, again = _catch(
        script, script_args, backend, at["kernel"], session, timeout,
        crash=f"{at['kernel']}:{at['launch']}", folder="kernel_crash",
    )  # fmt: skip
    if status.get("found") and again == code:
        status["crash"] = {"exit": code, "signal": signal_signature(code), "launch": at["launch"]}
        status["launches"] = first.get("launches")
        return status
    first["crash_rerun"] = f"exit {again}" + ("" if status.get("found") else ", the launch not reached")
    return first


def _catch(
    script, script_args, backend, kernel, session: Path, timeout, crash: str = "", folder: str = "kernel"
) -> tuple[dict, int | None]:
    """Run SCRIPT with the launch catcher: (its status, the script's exit code)."""
    from fxlens.capture.command import run_captured

    catch = session / folder
    carried = [f"{k}={os.environ[k]}" for k in ("FXLENS_INJECT",) if os.environ.get(k)]
    command = shlex.join(carried) + (" " if carried else "") + shlex.join(
        ["fxlens", "minify", "--kernel", *(["--kernel-name", kernel] if kernel else []),
         *(["--backend", backend] if backend else []), script, *script_args]
    )  # fmt: skip
    env = {
        config.ENV_RUNNER_HOOK: HOOKS,
        config.ENV_KERNEL_OUT: str(catch.absolute()),
        config.ENV_KERNEL_NAME: kernel or "",
        config.ENV_KERNEL_BACKEND: backend or "",
        config.ENV_KERNEL_COMMAND: command,
        config.ENV_KERNEL_CRASH: crash,
        "FXLENS_CHECK_KERNELS": "1",  # the wrapper hands its size symbols to the kernels' replays
        # inductor's kernels are caught where it generates them: a cached graph would skip that
        "TORCHINDUCTOR_FX_GRAPH_CACHE": "0",
        "TORCHINDUCTOR_AUTOGRAD_CACHE": "0",
    }
    log = session / ("script.log" if folder == "kernel" else f"script_{folder}.log")
    res = run_captured(
        script, script_args, backend=backend, session_dir=str(session), env=env, timeout=timeout,
        stdout=log, stderr=log, trace=False,
    )  # fmt: skip
    return _read_status(catch), res.exit_code


def _place(catch: Path, name: str, out: str | None, out_dir: str | None) -> Path:
    """Copy the child's reproducer and tensors to their place (a name claimed atomically)."""
    from fxlens.minify.repro_writer import claim, release

    repro_dir = Path(out_dir) if out_dir else config.load_minify().repro_dir
    if out:
        path = claim(out, numbered=False, also=(".pt",))
    else:
        path = claim(_default_out(repro_dir, name), also=(".pt",))
    try:
        shutil.copyfile(catch / "kernel.py", path)
        shutil.copyfile(catch / "kernel.pt", path.with_suffix(".pt"))
    except BaseException:
        release(path, also=(".pt",))
        raise
    return path


def _result(status: dict, path: Path, backend, reproduced, seconds: float, session: Path) -> dict:
    result = {
        "repro": str(path),
        "inputs": str(path.with_suffix(".pt")),
        "kernel": status["kernel"],
        "backend": backend or status.get("backend") or "(the script's own)",
        "graph": status.get("graph"),
        "compile_id": status.get("compile_id"),
        "ops": status.get("ops") or [],
        "user_line": status.get("user_line"),
        "check": "crash" if status.get("crash") else "raise" if status.get("error") else "accuracy",
        "crash": status.get("crash"),
        "failure": status.get("failure"),
        "error": status.get("error"),
        "launch": status.get("launch"),
        "shrunk": status.get("shrunk"),
        "notes": status.get("notes") or [],
        "reproduced": reproduced,
        "seconds": round(seconds, 2),
        "session": str(session),
    }
    result["summary"] = summary_line(result)
    return result


def _promise(path: Path, code: int, stderr: str, slow: bool) -> None:
    """Head the reproducer with the outcome its fresh run showed (`# expect:`), as minify's
    reproducers are: a copy in repro_cases/ is then checked by the corpus test as it is."""
    sig = next((ln for ln in reversed(stderr.splitlines()) if ln.startswith(SIGNATURE_PREFIX)), None)
    lines = [f"# expect: exit {code}" + (f", {sig}" if sig else "")]
    if slow:
        lines.append("# corpus: slow (an inductor C++ compile)")
    path.write_text("\n".join(lines) + "\n" + path.read_text())


def summary_line(r: dict) -> str:
    f = r.get("failure") or {}
    if r.get("crash"):
        c = r["crash"]
        what = f"ends the process ({c['signal']}, exit {c['exit']}) at its launch {c['launch']}"
    elif r.get("error"):
        what = f"raises {r['error'].splitlines()[0][:160]}"
    else:
        what = f"output {f.get('output')} ({f.get('op')}) max abs err {f.get('max_abs_err', 0):.3g} vs eager fp64"
    size = ""
    if r.get("shrunk"):
        a, b = r["launch"], r["shrunk"]
        size = f"; inputs cut from {a.get('inputs')} to {b.get('inputs')}"
    rep = f"; reproduced {r['reproduced']} without fxlens" if r.get("reproduced") else ""
    return f"kernel {r['kernel']} [{', '.join(r.get('ops') or [])}] {what}{size}{rep}"


def _read_status(folder: Path) -> dict:
    try:
        return json.loads((folder / "kernel.json").read_text())
    except (OSError, ValueError):
        return {}


def _why_none(status: dict, kernel: str | None, code: int | None, log: Path) -> str:
    if status.get("write_error", "").endswith("no kernel to reproduce"):
        return status["write_error"]
    if status.get("write_error"):
        return f"the failing launch was caught but could not be written: {status['write_error']}"
    launches = status.get("launches")
    if launches is None:
        tail = _tail(log)
        return f"the script ended (exit {code}) before any compiled kernel ran{': ' + tail if tail else ''}"
    if kernel and not launches.get(kernel):
        seen = ", ".join(sorted(status.get("seen") or [])) or "none"
        return f"kernel {kernel} never ran (kernels launched: {seen}); check --kernel-name and --backend"
    unchecked = status.get("unchecked") or {}
    total = sum(n for k, n in launches.items() if k not in unchecked)
    agreed = f"{total} kernel launch(es) agree with eager's fp64 computation of their ops"
    if unchecked:
        k, why = next(iter(unchecked.items()))
        n = sum(launches.get(k, 0) for k in unchecked)
        agreed += f"; {n} launch(es) of {', '.join(sorted(unchecked))} could not be checked ({k}: {why})"
    if code is not None and code < 0:  # a kernel launch ended the process: that is the failure
        return _why_killed(status, code, agreed)
    which = f"kernel {kernel}" if kernel else "no kernel"
    return (
        f"{which} failed: {agreed} (exit {code}); the failure is elsewhere (try `fxlens minify` on the graph)"
    )


def _why_killed(status: dict, code: int, agreed: str) -> str:
    from fxlens.minify.repro_writer import signal_signature

    at = status.get("inflight")
    if at:
        rerun = status.get("crash_rerun") or "?"
        return (
            f"the script was {signal_signature(code)} in launch {at['launch']} of kernel {at['kernel']}, the"
            f" failure; its rerun to write that launch ended otherwise ({rerun}); {agreed} before it"
        )
    return (
        f"the script was {signal_signature(code)} outside the kernel launches watched ({agreed}): the abort"
        " is the failure, not in a kernel this check can write (try `fxlens minify` on the graph: it reduces aborts)"
    )


def _tail(log: Path) -> str:
    try:
        lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1][:200] if lines else ""


def main(args, out: str | None, out_dir: str | None) -> int:
    """`fxlens minify --kernel`: OUT, or a fresh name in OUT_DIR (as `minify.command.main` read --out)."""
    r = minify_kernel(
        args.script,
        args.script_args,
        args.backend,
        args.kernel_name,
        out,
        out_dir=out_dir,
        json_path=args.json,
        timeout=config.run_timeout(args.timeout),
    )
    print(f"fxlens minify --kernel: {r['summary']}")
    print(f"  python {r['repro']}")
    return 0 if (r["reproduced"] or "1/").startswith("1/") else 1
