"""Processes for the reproducer's re-runs that do not each pay for importing torch.

A zygote (`python -m fxlens.minify.verify MODULE...`) imports torch and the modules the backend
compiles with while the reduction still runs, then waits. Asked to run a reproducer N times, it
forks N children; each runs the file as `__main__` (like `python FILE`: own folder first on
sys.path, stdout discarded, stderr to a file) and exits with the script's status. Nothing was ever
compiled in the zygote, so each child starts with Dynamo's and the backend's state untouched, and
its random state is set as a new interpreter's; what it shares with the zygote is modules already
imported. That is why `repro_writer.verify` still runs
one of the re-runs as a plain `python FILE` in a new interpreter: a reproducer that forgot an
import it needs would pass in a fork and fail there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from fxlens.capture import children

READY = "ready"


class Zygote:
    """A process that has imported torch (and `preload`), forking reproducer runs on request."""

    def __init__(self, preload: list[str], env: dict | None = None):
        env = {k: v for k, v in (env or os.environ).items() if k not in ("TORCH_TRACE",)}
        self.proc = children.popen(
            [sys.executable, "-m", "fxlens.minify.verify", *preload],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            text=True,
        )
        self.ready = False

    def run(
        self, path: Path, n: int, timeout: float, cwd: Path | None = None, stderr_dir: Path | None = None
    ) -> list[tuple[int, str]] | None:
        """(exit status, stderr text) of `n` forked runs of `path`; None when the zygote is gone.

        Each run starts in `cwd` (default: the script's folder) and leaves its stderr in
        `stderr_dir` (default: next to the script, as `NAME.runI.stderr`)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            if not self.ready and self.proc.stdout.readline().strip() != READY:
                return None
            self.ready = True
            req = {"path": str(Path(path).resolve()), "n": n, "timeout": timeout}
            req.update(cwd=cwd and str(cwd), stderr_dir=stderr_dir and str(stderr_dir))
            self.proc.stdin.write(json.dumps(req))
            self.proc.stdin.write("\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        except (BrokenPipeError, ValueError):
            return None
        if not line:
            return None
        return [(code, Path(err).read_text(errors="replace")) for code, err in json.loads(line)]

    def close(self) -> None:
        children.end(self.proc, grace=0)  # the zygote's group: it and any run it forked


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


def zygote_main(preload: list[str]) -> int:
    import importlib

    children.die_with_parent()  # fxlens killed, even by SIGKILL: so is the zygote

    import torch  # noqa: F401

    for name in preload:
        try:
            importlib.import_module(name)
        except Exception:  # a preload that fails is imported (and fails) in the run itself
            pass
    print(READY, flush=True)
    for line in sys.stdin:
        req = json.loads(line)
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
        print(json.dumps([(codes[pid], err) for pid, err in runs]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(zygote_main(sys.argv[1:]))
