"""Minify workers forked from one zygote (issue 24: each worker imported torch and inductor itself,
on a 2-core box while the script's own run compiled): the protocol, a crash, a restart, the end."""

import signal
import sys

import pytest

from fxlens.minify.workers import Forked, Pool

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


def _baseline_in_a_new_interpreter() -> set[str]:
    """Ground truth for the pool's baseline: `baseline_config_lines` in a new interpreter with this
    environment."""
    import json
    import subprocess

    code = "import json; from fxlens.minify.capture import baseline_config_lines as b; print(json.dumps(sorted(b())))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return set(json.loads(out))


def test_workers_fork_from_the_zygote_crash_restart_and_end_and_the_baseline_is_a_new_interpreters(tmp_path):
    # one pool (one zygote importing torch) for the protocol and the baseline probe
    pool = Pool(size=2, timeout=60, log_dir=tmp_path / "workers", spawn=False)
    try:
        assert pool.zygote is not None and not pool.zygote.started  # idle until the backend is named
        pool.set_backend("eager")
        pool.prepare()
        assert pool.zygote.started
        # the baseline a worker probed as it warmed up is the probe a new interpreter makes
        assert pool.baseline() == _baseline_in_a_new_interpreter()
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


# what a reproducer forked from the zygote sees: inductor's compile threads, and how many modules
# its first inductor compile still has to import (the zygote did the first compile's once-per-
# process work: `torch_compat.warm_inductor_process`)
PROBE = """
import sys
import torch
import torch._inductor.compile_fx
import torch._inductor.config as config
before = set(sys.modules)
torch.compile(lambda x: x * 2 + 1, backend="inductor")(torch.ones(8))
new = [m for m in set(sys.modules) - before if not m.endswith(".kernel")]  # the compiled kernels
sys.stderr.write(f"{config.compile_threads} {len(new)}")
"""


# the compile-threads setting a forked reproducer sees (the number of new modules left out: 0)
THREADS = """
import sys
import torch._inductor.config as config
sys.stderr.write(f"{config.compile_threads} 0")
"""


def _probe(tmp_path, name, env, probe=PROBE):
    from fxlens.minify.verify import Zygote, preload_for

    script = tmp_path / f"{name}.py"
    script.write_text(probe)
    z = Zygote(preload_for("inductor"), env=env)
    try:
        [(code, err)] = z.run(script, 1, timeout=300)
    finally:
        z.close()
    assert code == 0, err
    threads, new = err.split()[-2:]
    return int(threads), int(new)


def test_reruns_forked_from_the_zygote_compile_in_process_with_the_first_compile_done(tmp_path):
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "TORCHINDUCTOR_COMPILE_THREADS"}
    # ground truth: the same probe in a new interpreter, as `python FILE` runs it
    (tmp_path / "fresh.py").write_text(PROBE)
    fresh = subprocess.run(
        [sys.executable, str(tmp_path / "fresh.py")], capture_output=True, text=True, env=env
    )
    assert fresh.returncode == 0, fresh.stderr
    fresh_new = int(fresh.stderr.split()[-1])
    assert fresh_new > 50  # inductor's first compile imports hundreds of modules lazily (223 on 2.13)

    threads, new = _probe(tmp_path, "forked", env)
    assert threads == 1  # no compile subprocess pool in the zygote's forks
    assert new * 10 <= fresh_new, (new, fresh_new)  # the zygote imported them once for every fork
    # a user's own setting is theirs (read without compiling: with 3 threads the compile would
    # start inductor's pool of compile workers, each importing torch, to check the same number)
    threads, _ = _probe(tmp_path, "users", {**env, "TORCHINDUCTOR_COMPILE_THREADS": "3"}, THREADS)
    assert threads == 3
