"""Runs of the user's script forked from a warm process: one that imported torch, compiled nothing.

`fxlens bisect` starts one such process, a `WarmServer` (`python -m fxlens.bisect.forked_runs`), for its
ladder and graph/kernel/fusion runs: it imports torch, inductor and the bisect wrapper once and forks
one child per run on request; each child writes TORCH_TRACE into its run's session like a fresh
runner. Runs go to a new interpreter instead when FXLENS_BISECT_FRESH_RUNS=1, when the script
assigns environment variables (torch may read them at import, which the warm process did before
the script ran), or when a run's own environment changes a TORCH* switch.

The CompilerBisector driver (`fxlens.bisect.inductor`) imports torch and inductor once, with every
environment switch torch reads at import time already set, then forks one child per bisector
step. The child sets that step's own switches (`TORCH_BISECT_SUBSYSTEM`, ...), starts a session
and process group of its own, sends its output to the run's output file, and runs the script as
`__main__` through the same runner a fresh `python -m fxlens.capture.runner` uses. So each step
still runs the whole script (it counts as a run), starts with Dynamo's and inductor's state
untouched (the warm process never compiled), and skips only interpreter start and imports.

What a fork would share with its parent besides imported modules: the state of Python's `random`,
numpy's global generator and torch's default generator, which `children.fresh_random_state` sets
as a new interpreter has them (the first two from the OS, torch's at its fixed default seed), so
forks never repeat each other's draws; `functools.cache`d environment reads, which `_forget_cached_env` clears
for the bisector's own switches; and str hashing's random seed (PYTHONHASHSEED), which only a new
interpreter can change.
The driver's steps write no TORCH_TRACE (they only need pass/fail); the server's runs do.

When `fxlens bisect` has a server, the driver itself is forked from it too (`WarmServer.hand_over`):
the server never ran a script (each run is its fork), so its state is a fresh import's, and the
switches the driver sets that the server lacked (`TORCH_BISECT_BACKEND`, `TORCH_COMPILE_BACKEND`)
are read only through the bisector's cached env reads, which the driver clears after setting them.
The script's own module is never imported into the server: a script runs its work at import.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from fxlens import __version__
from fxlens.capture import children
from fxlens.capture.command import RunResult
from fxlens.report.exits import TIMEOUT_EXIT
from fxlens.trace.session import TRACE_DIR, write_info

READY = "fxlens-bisect-warm-ready"
# TORCH* switches torch reads when they are used, not at import: TORCHDYNAMO_DISABLE in
# torch._dynamo.optimize, on every torch.compile call (bisect's "no torch.compile" run)
_READ_AT_CALL = frozenset({"TORCHDYNAMO_DISABLE"})


def _forget_cached_env() -> None:
    """torch caches its bisector's env reads (`get_env_val` is functools.cache'd, and the warm
    process read them at import): this step's TORCH_BISECT_* must be read afresh."""
    from fxlens.backend.torch_compat import clear_bisector_env_cache

    clear_bisector_env_cache()


def _start_trace() -> None:
    """Open torch's structured trace at $TORCH_TRACE, as importing torch does in a fresh runner (the
    warm process imported torch without it: its trace handler has no folder and never wrote)."""
    from fxlens.backend.torch_compat import restart_structured_trace

    restart_structured_trace()


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
        devnull = os.open(os.devnull, os.O_RDONLY)  # never the warm process's request pipe
        os.dup2(devnull, 0)
        os.close(devnull)
        _forget_cached_env()
        from fxlens.bisect.backend import mark_forked

        mark_forked()  # the run's time starts here, with no imports (`Outcome.times`)
        children.fresh_random_state()
        if "TORCH_TRACE" in env:
            _start_trace()
        from fxlens.capture.runner import run_script

        code = run_script(script, args, module=module)
    except BaseException:  # noqa: BLE001 - fxlens's own failure here: say it, exit non-zero
        import traceback

        traceback.print_exc()
    finally:
        _exit_child(code)


def _wait(pid: int, timeout: float | None) -> int:
    """The child's exit status (negative: its signal); 124 when it ran past `timeout`. Whatever it
    left running in its group is ended before it is reaped (its pid, the group id, stays reserved)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    delay = 0.01
    timed_out = False
    while os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        if deadline is not None and time.monotonic() >= deadline:
            timed_out = True
            children.killpg(pid, signal.SIGTERM)
            end = time.monotonic() + children.GRACE_S
            while time.monotonic() < end:
                if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                    break
                time.sleep(0.02)
            break
        time.sleep(delay)
        delay = min(delay * 2, 0.1)
    children.killpg(pid, signal.SIGKILL)  # stragglers in its group (and it, after a timeout)
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
    trace: bool = False,
) -> RunResult:
    """One run of SCRIPT forked from this (warm) process into `session_dir`; like `run_captured`,
    with torch's trace in the session only when `trace`. `env` is applied in the child only (a
    None value unsets)."""
    sdir = Path(session_dir)
    sdir.mkdir(parents=True, exist_ok=True)
    info = {
        "script": os.path.abspath(script),
        "argv": list(script_args),
        "backend": env.get("FXLENS_BACKEND_OVERRIDE"),
        "nproc": 0,
        "cwd": os.getcwd(),
        "started": time.time(),
        "fxlens_version": __version__,
        "forked": True,
        "exit_code": None,
    }
    write_info(sdir, info)
    # absolute, as in run_captured: the script may change directory before it compiles
    env = {**env, "FXLENS_SESSION": str(sdir.absolute())}
    if trace:
        env["TORCH_TRACE"] = str(sdir.absolute() / TRACE_DIR)
    sys.stdout.flush()
    sys.stderr.flush()
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        _child(script, list(script_args), env, output, module)
    try:
        code = _wait(pid, timeout)
    except BaseException:  # interrupted: end the run's group before the exception goes on
        children.killpg(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise
    seconds = time.perf_counter() - t0
    info.update(exit_code=code, finished=time.time(), seconds=round(seconds, 3))
    if code == TIMEOUT_EXIT and timeout:
        info["timed_out"] = timeout
    write_info(sdir, info)
    return RunResult(sdir, code, seconds)


class WarmServer:
    """The client side of `python -m fxlens.bisect.forked_runs`: a process that imported torch, inductor
    and the bisect wrapper (with `env` set first) and forks one run per request."""

    def __init__(self, env: dict[str, str]):
        self.env = {k: v for k, v in {**os.environ, **env}.items() if k != "TORCH_TRACE"}
        self.proc = children.popen(
            [sys.executable, "-m", "fxlens.bisect.forked_runs"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=self.env,
            text=True,
        )
        self.ready = False
        self.waited_s = 0.0  # how long the latest run waited for this process to be ready

    def differs(self, env: dict) -> list[str]:
        """The TORCH* switches `env` sets otherwise than this process had them at import (those
        torch reads at each call take effect in the fork too)."""
        return [
            k
            for k, v in env.items()
            if k.startswith("TORCH") and k not in _READ_AT_CALL and self.env.get(k) != v
        ]

    def run(self, script: str, args: list[str], **kw) -> RunResult | None:
        """`run_forked(script, args, **kw)` with a trace, in the server; None when it is gone."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        req = {
            "script": script,
            "args": list(args),
            **{k: str(v) if isinstance(v, Path) else v for k, v in kw.items()},
        }
        try:
            t0 = time.perf_counter()
            if not self.ready and self.proc.stdout.readline().strip() != READY:
                return None
            # the first run waited for the server's own start and imports (`Outcome.times`)
            self.waited_s = 0.0 if self.ready else time.perf_counter() - t0
            self.ready = True
            self.proc.stdin.write(json.dumps(req) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        except (BrokenPipeError, ValueError, OSError):
            return None
        if not line:
            return None
        res = json.loads(line)
        return RunResult(Path(kw["session_dir"]), res["exit_code"], res["seconds"])

    def hand_over(self, spec_path: Path, output: Path) -> ForkedDriver | None:
        """The CompilerBisector driver forked from this process (no interpreter start, no imports);
        its output goes to `output`. None when the server is gone."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        output.touch()
        try:
            if not self.ready and self.proc.stdout.readline().strip() != READY:
                return None
            self.ready = True
            self.proc.stdin.write(json.dumps({"handover": str(spec_path), "output": str(output)}) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        except (BrokenPipeError, ValueError, OSError):
            return None
        return ForkedDriver(self, json.loads(line)["pid"], output) if line else None

    def close(self) -> None:
        children.end(self.proc, grace=2)  # SIGTERM: it ends the run it is waiting on first


class ForkedDriver:
    """A driver forked by the server, as `fxlens.bisect.inductor.hand_over` uses a Popen: `pid` (its
    group), `stdout` (its lines, as written), `end()`, `wait()`, `returncode`."""

    def __init__(self, server: WarmServer, pid: int, output: Path):
        self.pid, self.output, self.returncode = pid, output, None
        self._done = threading.Event()
        # the server answers once more when the driver exits: read it aside, the lines go on
        threading.Thread(target=self._await, args=(server,), daemon=True).start()
        self.stdout = self._lines()

    def _await(self, server: WarmServer) -> None:
        try:
            line = server.proc.stdout.readline()
            self.returncode = json.loads(line)["exit_code"] if line else -9
        except (OSError, ValueError):
            self.returncode = -9
        self._done.set()

    def _lines(self):
        with open(self.output, errors="replace") as f:
            buf = ""
            while True:
                done = self._done.is_set()  # before the read: what it wrote last is read after
                buf += f.read()
                *lines, buf = buf.split("\n")
                yield from (ln + "\n" for ln in lines)
                if done:
                    break
                self._done.wait(0.1)
            if buf:
                yield buf

    def wait(self) -> int:
        self._done.wait()
        return self.returncode

    def end(self) -> None:
        """SIGTERM (the driver ends its steps and writes what it has), SIGKILL after the grace."""
        children.killpg(self.pid, signal.SIGTERM)
        if not self._done.wait(children.GRACE_S):
            children.killpg(self.pid, signal.SIGKILL)
            self._done.wait(5)


def _exit_child(code: int) -> None:
    """End a forked child: its output flushed, never the warm process's atexit handlers (the
    bisector's cleanup), whatever flushing raises."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def _driver_child(spec_path: str, output: str) -> None:
    """In the forked child: `python -m fxlens.bisect.inductor SPEC` without its start (never returns)."""
    code = 1
    try:
        os.setsid()  # its own group, as a Popen'd driver has: the deadline ends it by its pid
        fd = os.open(output, os.O_WRONLY | os.O_APPEND)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        devnull = os.open(os.devnull, os.O_RDONLY)  # never the server's request pipe
        os.dup2(devnull, 0)
        os.close(devnull)
        os.environ[children.ENV_PARENT] = str(os.getppid())
        from fxlens.bisect.inductor import main

        code = main([spec_path])
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except BaseException:  # noqa: BLE001 - fxlens's own failure here: say it, exit non-zero
        import traceback

        traceback.print_exc()
    finally:
        _exit_child(code)


def _serve_handover(req: dict) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _driver_child(req["handover"], req["output"])
    print(json.dumps({"pid": pid}), flush=True)
    print(json.dumps({"exit_code": _wait(pid, None)}), flush=True)


def serve() -> int:
    """The server: import once, then one forked run per JSON request line on stdin."""
    children.install_sigterm()
    children.die_with_parent()  # fxlens killed, even by SIGKILL: so is this process (its runs: above)
    import torch  # noqa: F401
    import torch._inductor.compile_fx  # noqa: F401 - inductor's imports, paid once

    import fxlens.bisect.backend  # noqa: F401 - the wrapper every run compiles through
    import fxlens.bisect.fp64_compare  # noqa: F401
    import fxlens.bisect.inductor  # noqa: F401 - the CompilerBisector driver a hand-over forks
    import fxlens.capture.runner  # noqa: F401

    print(READY, flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        if "handover" in req:
            _serve_handover(req)
            continue
        req["session_dir"], req["output"] = Path(req["session_dir"]), Path(req["output"])
        res = run_forked(req.pop("script"), req.pop("args"), trace=True, **req)
        print(json.dumps({"exit_code": res.exit_code, "seconds": res.seconds}), flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(serve())
    except KeyboardInterrupt:  # and SIGTERM (children.Terminated)
        sys.exit(143)
