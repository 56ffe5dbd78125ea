"""Runs of the user's script forked from a warm process: one that imported torch, compiled nothing.

The CompilerBisector driver (`fxlens.bisect.inductor`) imports torch and inductor once, with every
environment switch torch reads at import time already set, then forks one child per bisector
step. The child sets that step's own switches (`TORCH_BISECT_SUBSYSTEM`, ...), starts a session
and process group of its own, sends its output to the run's output file, and runs the script as
`__main__` through the same runner a fresh `python -m fxlens.capture.runner` uses. So each step
still runs the whole script (it counts as a run), starts with Dynamo's and inductor's state
untouched (the warm process never compiled), and skips only interpreter start and imports.

What a fork shares with its parent besides imported modules: Python's `random` and numpy's global
seeds (a fresh interpreter draws new ones; forks draw the parent's), and `functools.cache`d
environment reads, which `_forget_cached_env` clears for the bisector's own switches.
No TORCH_TRACE is written (torch opens it at import time; these runs only need pass/fail).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

from fxlens.capture import children
from fxlens.capture.command import RunResult
from fxlens.trace.session import write_info

TIMEOUT_EXIT = 124


def _forget_cached_env() -> None:
    """torch caches its bisector's env reads (`get_env_val` is functools.cache'd, and the warm
    process read them at import): this step's TORCH_BISECT_* must be read afresh."""
    from torch._inductor import compiler_bisector

    compiler_bisector.get_env_val.cache_clear()


def _child(script: str, args: list[str], env: dict, output: Path, module: str | None) -> None:
    """In the forked child: set up like a fresh runner, run the script, exit (never returns)."""
    code = 1
    try:
        os.setsid()  # its own process group: ended with whatever it forks (compile workers)
        fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        for key, value in env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        # the warm process dies (even by SIGKILL): so does this run, with its group
        os.environ[children.ENV_PARENT] = str(os.getppid())
        children.die_with_parent(take_group=True)
        _forget_cached_env()
        from fxlens.capture.runner import run_script

        code = run_script(script, args, module=module)
    except BaseException:  # noqa: BLE001 - fxlens's own failure here: say it, exit non-zero
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)  # never the warm process's atexit handlers (the bisector's cleanup)


def _wait(pid: int, timeout: float | None) -> int:
    """The child's exit status (negative: its signal); 124 when it ran past `timeout`. Whatever it
    left running in its group is ended before it is reaped (its pid, the group id, stays reserved)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    delay = 0.01
    timed_out = False
    while os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        if deadline is not None and time.monotonic() >= deadline:
            timed_out = True
            children._killpg(pid, signal.SIGTERM)
            end = time.monotonic() + children.GRACE_S
            while time.monotonic() < end:
                if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                    break
                time.sleep(0.02)
            break
        time.sleep(delay)
        delay = min(delay * 2, 0.1)
    children._killpg(pid, signal.SIGKILL)  # stragglers in its group (and it, after a timeout)
    _, status = os.waitpid(pid, 0)
    return TIMEOUT_EXIT if timed_out else os.waitstatus_to_exitcode(status)


def run_forked(
    script: str,
    script_args: list[str],
    *,
    session_dir: Path,
    env: dict,
    timeout: float | None,
    output: Path,
    module: str | None = None,
) -> RunResult:
    """One run of SCRIPT forked from this (warm) process into `session_dir`; like `run_captured`,
    without TORCH_TRACE. `env` is applied in the child only (a None value unsets)."""
    sdir = Path(session_dir)
    sdir.mkdir(parents=True, exist_ok=True)
    info = {
        "script": os.path.abspath(script),
        "argv": list(script_args),
        "backend": env.get("FXLENS_BACKEND_OVERRIDE"),
        "cwd": os.getcwd(),
        "started": time.time(),
        "forked": True,
        "exit_code": None,
    }
    write_info(sdir, info)
    env = {**env, "FXLENS_SESSION": str(sdir)}
    sys.stdout.flush()
    sys.stderr.flush()
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        _child(script, list(script_args), env, output, module)
    try:
        code = _wait(pid, timeout)
    except BaseException:  # interrupted: end the run's group before the exception goes on
        children._killpg(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise
    seconds = time.perf_counter() - t0
    info.update(exit_code=code, finished=time.time(), seconds=round(seconds, 3))
    if code == TIMEOUT_EXIT and timeout:
        info["timed_out"] = timeout
    write_info(sdir, info)
    return RunResult(sdir, code, seconds)
