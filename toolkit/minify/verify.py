"""Processes for the reproducer's re-runs that do not each pay for importing torch.

A zygote (`python -m fxlens.minify.verify MODULE...`) imports torch and the modules the backend
compiles with while the reduction still runs, then waits. Asked to run a reproducer N times, it
forks N children; each runs the file as `__main__` (like `python FILE`: own folder first on
sys.path, stdout discarded, stderr to a file) and exits with the script's status. Nothing was ever
compiled in the zygote, so each child starts with Dynamo's and the backend's state untouched, and
its random state is set as a new interpreter's; what it shares with the zygote is modules already
imported and, for inductor, what a first compile computes once per process (the lazily imported
modules, torch's source hash, the pattern passes, the CPU's vector ISA:
`torch_compat.warm_inductor_process`), and in-process compiles (TORCHINDUCTOR_COMPILE_THREADS=1
unless the user set it). That is why `repro_writer.verify` still runs
one of the re-runs as a plain `python FILE` in a new interpreter: a reproducer that forgot an
import it needs would pass in a fork and fail there.

On a machine without spare cores the worker pool (`fxlens.minify.workers`) starts the zygote idle,
from the main thread, and has it import torch and the backend's modules once the script names the
backend; the pool's workers are forked from it too (`Zygote.fork_worker`: their two pipes go over a
socket), each in its own process group, reaped by the zygote, which says how each ended (`wait`).
So torch and inductor are imported once for every worker and two of the three re-runs.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from fxlens.backend.stages import stage
from fxlens.capture import children
from fxlens.minify.worker_loop import worker_main

READY = "ready"
LATER = "--later"  # argv: read the modules to preload from the first line of stdin
ENV_CONTROL_FD = "FXLENS_MINIFY_ZYGOTE_FD"  # the zygote's end of its control socket (worker pipes)


def preload_for(backend: str, inner: str = "") -> list[str]:
    """Modules a backend compiles with (imported ahead by the zygote)."""
    mods = ["torch._dynamo", *getattr(stage(backend), "preload", ())]
    if inner == "inductor" and "torch._inductor.compile_fx" not in mods:
        mods.append("torch._inductor.compile_fx")
    return mods


class Zygote:
    """A process that has imported torch (and `preload`), forking reproducer runs on request."""

    def __init__(self, preload: list[str] | None, env: dict | None = None):
        """`preload` None: the process starts and waits, importing nothing, until `start` names
        the modules (so a zygote started early, from the main thread, costs nothing until then)."""
        env = {
            k: v
            for k, v in (env or os.environ).items()
            if k not in ("TORCH_TRACE", "FXLENS_BACKEND_OVERRIDE")
        }
        # the worker pool's pipes go over this socket (`fork_worker`)
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        env[ENV_CONTROL_FD] = str(theirs.fileno())
        self.proc = children.popen(
            [sys.executable, "-m", "fxlens.minify.verify", *(preload if preload is not None else [LATER])],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            text=True,
            pass_fds=(theirs.fileno(),),
        )
        theirs.close()
        self.ready = False
        self.started = preload is not None
        self.lock = threading.Lock()  # the pool's threads fork and wait on workers at once

    def start(self, preload: list[str]) -> None:
        """Have a zygote started without modules import torch and `preload` now (once)."""
        with self.lock:
            if self.started:
                return
            self.started = True
            try:
                self.proc.stdin.write(json.dumps(preload) + "\n")
                self.proc.stdin.flush()
            except (BrokenPipeError, ValueError, OSError):
                pass

    def _ask(self, req: dict, fds: list[int] = ()) -> dict | list | None:
        """One request and its answer (None: the zygote is gone)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        with self.lock:
            try:
                if not self.ready and self.proc.stdout.readline().strip() != READY:
                    return None
                self.ready = True
                if fds:
                    socket.send_fds(self.control, [b"f"], list(fds))
                self.proc.stdin.write(json.dumps(req) + "\n")
                self.proc.stdin.flush()
                line = self.proc.stdout.readline()
            except (BrokenPipeError, ValueError, OSError):
                return None
        return json.loads(line) if line else None

    def fork_worker(self, stdin_fd: int, result_fd: int, log: Path, cwd: str | None) -> int | None:
        """The pid of a minify worker (`fxlens.minify.worker_loop.worker_main`) forked from this process,
        reading requests from `stdin_fd` and answering on `result_fd` (both passed over the control
        socket); its own process group, output to `log`. None when the zygote is gone."""
        res = self._ask({"worker": {"log": str(log), "cwd": cwd}}, [stdin_fd, result_fd])
        return res.get("pid") if isinstance(res, dict) else None

    def wait(self, pid: int, timeout: float) -> int | None:
        """A forked worker's exit status (negative: its signal); None if it still runs at `timeout`."""
        res = self._ask({"wait": pid, "timeout": timeout})
        return res.get("code") if isinstance(res, dict) else None

    def run(
        self, path: Path, n: int, timeout: float, cwd: Path | None = None, stderr_dir: Path | None = None
    ) -> list[tuple[int, str]] | None:
        """(exit status, stderr text) of `n` forked runs of `path`; None when the zygote is gone.

        Each run starts in `cwd` (default: the script's folder) and leaves its stderr in
        `stderr_dir` (default: next to the script, as `NAME.runI.stderr`)."""
        req = {"path": str(Path(path).resolve()), "n": n, "timeout": timeout}
        req.update(cwd=cwd and str(cwd), stderr_dir=stderr_dir and str(stderr_dir))
        res = self._ask(req)
        if not isinstance(res, list):
            return None
        return [(code, Path(err).read_text(errors="replace")) for code, err in res]

    def close(self) -> None:
        children.end(self.proc, grace=0)  # the zygote's group: it and any run it forked
        self.control.close()


def _child(path: str, err: str, cwd: str | None) -> None:
    """In a forked child: run `path` as __main__, then exit with its status (never returns)."""
    import runpy
    import traceback

    code = 0
    try:
        # the zygote killed: so is this run (PDEATHSIG is not inherited across fork)
        os.environ[children.ENV_PARENT] = str(os.getppid())
        children.die_with_parent()
        children.fresh_random_state()  # as `python FILE` would start: the re-runs must not agree by luck
        fd = os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 2)
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
        os.chdir(cwd or os.path.dirname(path))
        sys.argv = [path]
        sys.path[0] = os.path.dirname(path)
        runpy.run_path(path, run_name="__main__")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)


def _wait_all(pids: list[int], timeout: float) -> dict[int, int]:
    """Exit statuses (negative: the signal) of `pids`; 124 for one still running at the deadline."""
    codes: dict[int, int] = {}
    deadline = time.monotonic() + timeout
    while len(codes) < len(pids):
        for pid in pids:
            if pid in codes:
                continue
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                codes[pid] = os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            for pid in pids:
                if pid not in codes:
                    os.kill(pid, 9)  # a child this zygote forked
                    os.waitpid(pid, 0)
                    codes[pid] = 124
        time.sleep(0.05)
    return codes


def _worker(fds: list[int], log: str, cwd: str | None, control: socket.socket) -> None:
    """In a forked child: become a minify worker on the pipes `fds` (never returns)."""
    code = 1
    try:
        os.setsid()  # its own group: ended with whatever its compiles fork
        os.environ[children.ENV_PARENT] = str(os.getppid())
        children.die_with_parent()
        control.close()
        out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(out, 1)  # never the zygote's answers to the parent
        os.dup2(out, 2)
        os.close(out)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)  # never the zygote's requests
        os.close(devnull)
        sys.stdin = os.fdopen(fds[0], "r")  # the worker's requests
        os.environ["FXLENS_MINIFY_RESULT_FD"] = str(fds[1])
        children.fresh_random_state()
        if cwd:
            os.chdir(cwd)
        code = worker_main()
    except BaseException:  # noqa: BLE001 - the parent sees the pipe close and asks the status
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)


def _serve_worker(req: dict, control: socket.socket, workers: set) -> dict:
    """Fork a worker on the two fds that came over `control` with this request."""
    _, fds, _, _ = socket.recv_fds(control, 16, 2)
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        _worker(fds, req["worker"]["log"], req["worker"].get("cwd"), control)
    for fd in fds:
        os.close(fd)
    workers.add(pid)
    return {"pid": pid}


def _wait_worker(pid: int, timeout: float, workers: set) -> dict:
    if pid not in workers:
        return {"code": None}
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            workers.discard(pid)
            return {"code": os.waitstatus_to_exitcode(status)}
        if time.monotonic() > deadline:
            return {"code": None}
        time.sleep(0.02)


def _serve_runs(req: dict) -> list:
    """Fork `n` runs of the reproducer at `path`; their (exit status, stderr file)."""
    path, runs = req["path"], []
    for i in range(req["n"]):
        where = req.get("stderr_dir") or os.path.dirname(path)
        err = os.path.join(where, f"{os.path.basename(path)}.run{i}.stderr")
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            _child(path, err, req.get("cwd"))
        runs.append((pid, err))
    codes = _wait_all([pid for pid, _ in runs], req["timeout"])
    return [(codes[pid], err) for pid, err in runs]


def zygote_main(preload: list[str]) -> int:
    import importlib

    children.die_with_parent()  # fxlens killed, even by SIGKILL: so is the zygote
    if preload == [LATER]:  # started early: nothing imported until the modules are named
        line = sys.stdin.readline()
        if not line:
            return 0
        preload = json.loads(line)

    # inductor compiles in this process tree in-process, unless the user chose otherwise: the compile
    # subprocess pool each worker and forked re-run would start costs 1.7 CPU seconds apiece (it
    # imports torch again), and generates the same code. torch itself compiles in-process until its
    # pool is ready, so a failure that needs the pool shows only some of the time in the user's own
    # runs too; the one re-run in a new interpreter keeps the user's setting and would show it
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    import torch  # noqa: F401

    for name in preload:
        try:
            importlib.import_module(name)
        except Exception:  # a preload that fails is imported (and fails) in the run itself
            pass
    if any(name.startswith("torch._inductor") for name in preload):
        from fxlens.backend.torch_compat import warm_inductor_process

        warm_inductor_process()  # once here, not in every worker and re-run forked from here
    fd = os.environ.pop(ENV_CONTROL_FD, None)
    control = socket.socket(fileno=int(fd)) if fd else None
    workers: set[int] = set()  # minify workers forked from here (reaped when asked)
    print(READY, flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        if "worker" in req and control is not None:
            res = _serve_worker(req, control, workers)
        elif "wait" in req:
            res = _wait_worker(int(req["wait"]), float(req.get("timeout") or 0), workers)
        else:
            res = _serve_runs(req)
        print(json.dumps(res), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(zygote_main(sys.argv[1:]))
