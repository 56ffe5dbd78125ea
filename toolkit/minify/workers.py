"""A pool of worker processes that evaluate minify candidates, so a backend crash never kills fxlens.

Each worker (`python -m fxlens.minify.worker_loop`, or forked from the zygote) imports torch while
the parent is still capturing (from the start when there are spare cores, else once the script
compiles), resolves the backend named in its first stdin line once, then reads candidates
(reproducer source text) as JSON lines on stdin and answers each with its
failure signature on a private pipe (the worker's stdout is redirected to stderr, so whatever the
backend prints cannot corrupt the protocol). A worker that dies (segfault, abort) or exceeds the
per-candidate timeout is killed and restarted; that candidate's signature says what happened
("killed by SIGSEGV", "timeout"), which is "failed differently" unless it is the failure minified.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from fxlens.capture import children
from fxlens.minify.repro_writer import signal_signature
from fxlens.minify.verify import Zygote, preload_for

TIMEOUT_SIGNATURE = "timeout"
STARTUP_TIMEOUT_S = 300.0  # importing torch on a loaded machine, and resolving the backend


class Forked:
    """A worker forked from the pool's zygote (`fxlens.minify.verify.Zygote.fork_worker`): not our
    child, so the zygote reaps it and says how it ended; it leads its own process group."""

    def __init__(self, pid: int, stdin, zygote: Zygote):
        self.pid, self.stdin, self.zygote = pid, stdin, zygote
        self.returncode: int | None = None

    def poll(self) -> int | None:
        return self.wait(0)

    def wait(self, timeout: float) -> int | None:
        """Its exit status once it ended within `timeout` (what it left in its group is ended)."""
        if self.returncode is None:
            self.returncode = self.zygote.wait(self.pid, timeout)
            if self.returncode is not None:
                children.killpg(self.pid, 9)  # its group id stays ours while stragglers live
        return self.returncode

    def end(self) -> None:
        children.killpg(self.pid, 9)
        self.wait(5)
        try:
            self.stdin.close()
        except OSError:
            pass


def _wait(proc, timeout: float) -> int | None:
    return proc.wait(timeout) if isinstance(proc, Forked) else children.wait(proc, timeout=timeout)


def _end(proc) -> None:
    if isinstance(proc, Forked):
        proc.end()
    else:
        children.end(proc, grace=0)  # only the group this Worker started


class Worker:
    """One worker process; `ask` evaluates one candidate, restarting the process when needed."""

    def __init__(self, env: dict, log: Path, cwd: str | None):
        self.backend, self.env, self.log, self.cwd = "", env, log, cwd
        self.proc: subprocess.Popen | Forked | None = None
        self.ready = False
        self.warm_time: float | None = None  # time.time() when it had imported torch and warmed up
        self.baseline: list[str] | None = None  # the config lines its probe compile showed
        self.lines: queue.Queue = queue.Queue()
        self.zygote: Zygote | None = None  # fork from this process instead of a new interpreter

    def _fork(self) -> bool:
        """Fork the worker from the zygote (which imported torch and the backend's modules once
        for every worker and the reproducer's re-runs); False when the zygote is gone."""
        req_r, req_w = os.pipe()
        res_r, res_w = os.pipe()
        pid = self.zygote.fork_worker(req_r, res_w, self.log, self.cwd) if self.zygote else None
        os.close(req_r)
        os.close(res_w)
        if pid is None:
            os.close(req_w)
            os.close(res_r)
            self.zygote = None
            return False
        self.proc = Forked(pid, os.fdopen(req_w, "w"), self.zygote)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, args=(os.fdopen(res_r, "r"), self.lines), daemon=True).start()
        self.ready = False
        return True

    def spawn(self) -> None:
        """Start the process (it imports torch while it waits for the backend)."""
        if self.zygote is not None and self._fork():
            return
        read_fd, write_fd = os.pipe()
        env = dict(self.env, FXLENS_MINIFY_RESULT_FD=str(write_fd))
        with open(self.log, "a") as log:
            # its own process group: ended with whatever the backend forked (compile workers)
            self.proc = children.popen(
                [sys.executable, "-m", "fxlens.minify.worker_loop"],
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=log,
                env=env,
                cwd=self.cwd,
                pass_fds=(write_fd,),
                text=True,
            )
        os.close(write_fd)
        self.lines = queue.Queue()
        reader = os.fdopen(read_fd, "r")
        threading.Thread(target=self._read, args=(reader, self.lines), daemon=True).start()
        self.ready = False

    def _start(self) -> None:
        """Make sure the process runs and has resolved the backend."""
        if self.proc is None or self.proc.poll() is not None:
            self.spawn()
        if self.ready:
            return
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"backend": self.backend}) + "\n")
        self.proc.stdin.flush()
        ready = self._next(STARTUP_TIMEOUT_S)
        if ready is not None and "warm" in ready:  # sent before the backend: torch imported
            self.warm_time = self.warm_time or ready["warm"]
            self.baseline = self.baseline if self.baseline is not None else ready.get("baseline")
            ready = self._next(STARTUP_TIMEOUT_S)
        if ready is None or ready.get("ready") is not True:  # no answer, EOF or an error
            err = (ready or {}).get("error") or ("the process exited" if ready else "no answer")
            self.stop()
            raise RuntimeError(f"minify worker failed to start: {err}")
        self.ready = True

    @staticmethod
    def _read(reader, lines: queue.Queue) -> None:
        for line in reader:
            lines.put(line)
        lines.put(None)  # EOF: the process is gone

    def _next(self, timeout: float) -> dict | None:
        """The next answer; None when none came in time; {"eof": True} when the pipe closed."""
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            return None
        return json.loads(line) if line else {"eof": True}

    def ask(self, src: str, timeout: float, call: str | None = None) -> str | None:
        """The signature of one candidate (None: it passes); with `call`, what the function of
        that name defined by `src` returns when called with (backend, backend spec)."""
        self._start()
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps({"src": src, "call": call}) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        answer = self._next(timeout)
        if answer is not None and "sig" in answer:
            return answer["sig"]
        # no answer: a hang (timeout) or a dead process (its signal says how it died). The pipe
        # closes as the process dies, a moment before it can be reaped: wait for that
        if answer is None:
            self.stop()
            return TIMEOUT_SIGNATURE
        code = _wait(self.proc, 30)
        if code is None:  # closed its pipe but lives on: as good as hung
            self.stop()
            return TIMEOUT_SIGNATURE
        self.proc, self.ready = None, False
        return signal_signature(code) if code < 0 else f"worker exited with status {code}"

    def stop(self) -> None:
        if self.proc is not None:
            _end(self.proc)
        self.proc, self.ready = None, False


class Pool:
    """Evaluate candidates in parallel on `size` workers (default: every core)."""

    def __init__(self, *, size: int = 0, timeout: float = 120.0, log_dir: Path, cwd=None, spawn=True):
        """`spawn=False`: no process starts until `prepare` or the first candidate."""
        self.size = size or os.cpu_count() or 1
        self.spawned = spawn
        self.started = time.time()
        self.timeout = timeout
        env = {k: v for k, v in os.environ.items() if k not in ("TORCH_TRACE", "FXLENS_BACKEND_OVERRIDE")}
        log_dir.mkdir(parents=True, exist_ok=True)
        self.workers = [Worker(env, log_dir / f"worker{i}.log", cwd) for i in range(self.size)]
        for w in self.workers if spawn else ():
            w.spawn()
        self.free: queue.Queue = queue.Queue()
        for w in self.workers:
            self.free.put(w)
        self.executor = ThreadPoolExecutor(max_workers=self.size)
        # workers not started up front fork from one process that imports torch and the backend's
        # modules once (`prepare`); the reproducer's re-runs fork from it too (`close_zygote` ends
        # it). Started here, idle: a child started from a thread that ends would die with it
        self.zygote: Zygote | None = None if spawn else Zygote(None)

    def set_backend(self, backend: str) -> None:
        """The backend spec every candidate is compiled with (sent to each worker on first use;
        a worker that resolved another one is restarted)."""
        for w in self.workers:
            if w.backend and w.backend != backend:
                w.stop()
            w.backend = backend

    def prepare(self) -> None:
        """Have every worker resolve the backend (and warm it up) now, in the background: forked
        from the zygote, started here for the backend, when no worker was started up front."""
        if self.zygote is not None and not self.zygote.started and self.workers[0].backend:
            self.zygote.start(preload_for(self.workers[0].backend))
            for w in self.workers:
                w.zygote = self.zygote

        for _ in self.workers:
            self.executor.submit(self._start_one)

    def _start_one(self) -> None:
        """Start the next free worker (a no-op for one already started)."""
        w = self.free.get()
        try:
            w._start()
        except RuntimeError:  # the first candidate's ask retries and reports it
            pass
        finally:
            self.free.put(w)

    def _one(self, src: str, call: str | None = None) -> str | None:
        w = self.free.get()
        try:
            return w.ask(src, self.timeout, call)
        finally:
            self.free.put(w)

    def call(self, src: str, call: str) -> str | None:
        """Run function `call` defined by `src` in a worker (e.g. capturing ATen graphs)."""
        return self.executor.submit(self._one, src, call).result()

    def evaluate(self, sources: list[str]) -> list[str | None]:
        """Signatures of `sources`, in order (evaluated concurrently)."""
        return list(self.executor.map(self._one, sources))

    def baseline(self) -> set[str] | None:
        """The torch config lines a plain compile shows in a worker (`capture.baseline_config_lines`,
        probed as it warms up), waiting for one worker to start; None when none could."""
        if not self.workers[0].backend:
            return None
        self._start_one()
        found = next((w.baseline for w in self.workers if w.baseline is not None), None)
        return set(found) if found is not None else None

    def warm_at(self) -> float | None:
        """Seconds after the pool started when the last worker had imported torch and warmed up."""
        times = [w.warm_time for w in self.workers if w.warm_time is not None]
        return round(max(times) - self.started, 2) if times else None

    def close(self) -> None:
        """End the workers (the zygote stays for the reproducer's re-runs)."""
        self.executor.shutdown(wait=False, cancel_futures=True)
        for w in self.workers:
            w.stop()

    def close_zygote(self) -> None:
        if self.zygote is not None:
            self.zygote.close()
            self.zygote = None

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
        self.close_zygote()
