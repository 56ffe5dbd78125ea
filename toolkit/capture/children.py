"""Every process fxlens starts runs in its own process group, and is ended with all it forked.

The watched script may fork (DataLoader workers, torchrun ranks, inductor's compile workers), and a
backend may hang. Killing only the direct child would orphan the rest, so each child starts in a new
session (its own process group) and is ended through the group: SIGTERM, a grace period, SIGKILL.
The groups still alive are tracked here, so the CLI's Ctrl-C / SIGTERM handling ends them all
(`end_all`) before it exits with 130 / 143.

A child's group is also ended when the child itself exits, so a forked grandchild it left running
never outlives the run. We wait with WNOWAIT first: the group's id is the child's pid, which cannot
be reused until the child is reaped, so `killpg` never reaches an unrelated process.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from typing import TYPE_CHECKING

from fxlens.trace.processes import alive

if TYPE_CHECKING:  # imported where a child is started: every command's start installs the SIGTERM
    import subprocess  # handling below, and `fxlens report` starts no child

GRACE_S = 2.0  # between SIGTERM and SIGKILL: lets a child flush its trace and events

_live: dict[int, subprocess.Popen] = {}
_lock = threading.Lock()


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C's KeyboardInterrupt (exit status 143)."""


def popen(cmd: list[str], **kwargs) -> subprocess.Popen:
    """subprocess.Popen in a new process group, tracked until `end` (or `wait`) is called."""
    import subprocess

    env = dict(kwargs.pop("env", None) or os.environ)
    env[ENV_PARENT] = str(os.getpid())  # see die_with_parent
    proc = subprocess.Popen(cmd, start_new_session=True, env=env, **kwargs)
    with _lock:
        _live[proc.pid] = proc
    return proc


def killpg(pgid: int, sig: int) -> bool:
    """Signal process group `pgid`; False when it is gone (or not ours)."""
    try:
        os.killpg(pgid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _exited(proc: subprocess.Popen) -> bool:
    """Whether the child has exited, without reaping it (its pid, the group id, stays reserved)."""
    if proc.returncode is not None:
        return True
    try:
        info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:  # already reaped elsewhere
        return True
    return info is not None


def end(proc: subprocess.Popen, grace: float = GRACE_S) -> int:
    """End PROC's whole process group (SIGTERM, then SIGKILL after `grace` s); its exit status."""
    pgid = proc.pid
    if proc.returncode is None:
        killpg(pgid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and not _exited(proc):
            time.sleep(0.02)
        killpg(pgid, signal.SIGKILL)  # what it forked, if still there (the group id is still its own)
    code = proc.wait()
    with _lock:
        _live.pop(proc.pid, None)
    return code


def wait(proc: subprocess.Popen, timeout: float | None = None) -> int | None:
    """Wait for PROC to exit (None when `timeout` passed first: the caller ends it); then end
    whatever it left running in its group, and return its exit status."""
    deadline = None if timeout is None else time.monotonic() + timeout
    delay = 0.01
    while not _exited(proc):
        if deadline is not None and time.monotonic() >= deadline:
            return None
        time.sleep(delay)
        delay = min(delay * 2, 0.1)
    # the child is gone but not reaped: its group id is still its own; end stragglers it forked
    killpg(proc.pid, signal.SIGKILL)
    code = proc.wait()
    with _lock:
        _live.pop(proc.pid, None)
    return code


def run(cmd: list[str], timeout: float | None = None, **kwargs) -> int:
    """Run CMD to completion in its own group; 124 when it ran past `timeout` (the group ended).
    Interrupted (Ctrl-C, SIGTERM), the group is ended before the exception goes on."""
    proc = popen(cmd, **kwargs)
    try:
        code = wait(proc, timeout)
    except BaseException:
        end(proc)
        raise
    if code is None:
        end(proc)
        return 124
    return code


def end_all() -> None:
    """End every group still running (the CLI calls this on Ctrl-C and SIGTERM)."""
    with _lock:
        procs = list(_live.values())
    for proc in procs:
        killpg(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + GRACE_S
    for proc in procs:
        while time.monotonic() < deadline and not _exited(proc):
            time.sleep(0.02)
        end(proc, grace=0)


def install_sigterm() -> None:
    """Turn SIGTERM into `Terminated` in the main thread, so cleanup runs as for Ctrl-C."""

    def raise_terminated(signum, frame):
        raise Terminated()

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, raise_terminated)


ENV_PARENT = "FXLENS_PARENT_PID"  # set by `popen` in the child's environment
_PR_SET_PDEATHSIG = 1


def die_with_parent(take_group: bool = False) -> None:
    """In a child fxlens started: end when the fxlens process that started it dies, even by SIGKILL
    (which no handler can see, so the groups above would be orphaned).

    Linux's PR_SET_PDEATHSIG has the kernel send us a signal when our parent dies. Our own helpers
    (minify workers, the zygote) just die (SIGKILL). The runner of the user's script passes
    `take_group`: it gets SIGTERM instead and, when the parent is really gone, kills its whole
    process group, so what the script forked goes too. Elsewhere (no prctl) this does nothing.
    The kernel's "parent" is the thread that started us: fxlens starts children from its main
    thread or from pool threads that live as long as the pool.
    """
    parent = os.environ.get(ENV_PARENT)
    if not parent or not sys.platform.startswith("linux"):
        return
    if str(os.getppid()) != parent:
        # started through a launcher (torchrun under --nproc): the launcher is our parent, not
        # fxlens; unless fxlens is already gone, leave it to the launcher and the group
        if alive(int(parent)):
            return
        os.kill(os.getpid(), signal.SIGKILL)
    sig = signal.SIGTERM if take_group else signal.SIGKILL
    if take_group and threading.current_thread() is threading.main_thread():
        me = os.getpid()

        def on_term(signum, frame):
            # a process the script forked inherits this handler (a multiprocessing pool's workers,
            # ended by SIGTERM when the pool closes): its parent is the script, not fxlens, and it
            # must die as it would without fxlens, never take the script's whole group with it
            if os.getpid() == me and str(os.getppid()) != parent:  # fxlens is gone: take everything
                os.killpg(os.getpgrp(), signal.SIGKILL)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)  # else: the usual SIGTERM death
            os.kill(os.getpid(), signal.SIGTERM)

        signal.signal(signal.SIGTERM, on_term)
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(sig))
    except (OSError, AttributeError):
        return
    if str(os.getppid()) != parent:  # it died before prctl took effect
        os.kill(os.getpid(), sig)


def fresh_random_state() -> None:
    """In a forked run: random state as a new interpreter starts with it. Python's `random` and
    numpy's global generator seeded from the OS (a fork would draw its parent's numbers, the same
    in every run), torch's default generator at its default seed (whatever the parent drew)."""
    import random

    random.seed()
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.random.default_generator.manual_seed(torch.Generator().initial_seed())
