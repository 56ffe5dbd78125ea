# fxlens corpus case: a fixed bug kept as a regression test (DESIGN.md style rule 11; issue 34).
# A script with no process group compiles in itself and in 2 pool workers (fork by default, `spawn`
# as argument); each process writes its own trace log. Under `fxlens run`, (1) each worker's log was
# read as a rank: "3 ranks ... RANK DIVERGENCE: ranks that compile differently can hang in
# collectives"; (2) the forked workers inherited the runner's SIGTERM handler, so the pool's
# terminate() at exit made a worker SIGKILL the script's whole process group: exit 137 under fxlens,
# 0 without. tests/capture/test_ranks.py runs it under `fxlens run` and checks both. It prints the
# ground truth: how many processes had a process group, and how many compiled.
# expect: exit 0

import multiprocessing as mp
import os
import sys

import torch


def work(n):
    f = torch.compile(lambda x: x.sin() * n, backend="eager")
    f(torch.ones(3))
    return os.getpid(), torch.distributed.is_available() and torch.distributed.is_initialized()


if __name__ == "__main__":
    ctx = mp.get_context(sys.argv[1] if len(sys.argv) > 1 else "fork")
    results = [work(1)]
    with ctx.Pool(2) as pool:
        results += pool.map(work, [2, 3], chunksize=1)
    print("process groups:", sum(bool(pg) for _, pg in results), "processes:", len({p for p, _ in results}))
