"""Minify workers forked from one zygote (issue 24: each worker imported torch and inductor itself,
on a 2-core box while the script's own run compiled): the protocol, a crash, a restart, the end."""

import signal
import sys

import pytest

from fxlens.minify.pool import Forked, Pool

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork and /proc")

ASK = """
import os
def who(backend, spec):
    return f"{os.getpid()} {os.getppid()} {os.getpgrp()} {backend}"
def crash(backend, spec):
    os.kill(os.getpid(), SIG)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_workers_fork_from_the_zygote_crash_restart_and_end(tmp_path):
    pool = Pool(size=2, timeout=60, log_dir=tmp_path / "workers", spawn=False)
    try:
        assert pool.zygote is not None and not pool.zygote.started  # idle until the backend is named
        pool.set_backend("eager")
        pool.prepare()
        assert pool.zygote.started
        answers = [pool.call(ASK.replace("SIG", "0"), "who") for _ in range(4)]
        zygote = pool.zygote.proc.pid
        pids = set()
        for a in answers:
            pid, ppid, pgrp, backend = a.split()
            # ground truth from the kernel: the worker's parent is the zygote, it leads its own group
            assert int(ppid) == zygote and int(pgrp) == int(pid) and backend == "eager"
            pids.add(int(pid))
        assert all(isinstance(w.proc, Forked) for w in pool.workers)
        # a worker killed by a signal: the signature says which, as for a worker started anew
        assert pool.call(ASK.replace("SIG", str(int(signal.SIGSEGV))), "crash") == "killed by SIGSEGV"
        again = pool.call(ASK.replace("SIG", "0"), "who").split()
        assert int(again[1]) == zygote  # forked again from the same zygote
        pids.add(int(again[0]))
    finally:
        pool.close()
    assert not any(_alive(p) for p in pids)  # every worker ended with the pool
    assert _alive(zygote)  # the zygote stays for the reproducer's re-runs
    pool.close_zygote()
    assert not _alive(zygote)
