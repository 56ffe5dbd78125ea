"""Which logs of a job are ranks and which are worker processes of the script .

torch writes one TORCH_TRACE log per process. A rank is a process of a process group (torch logs its
rank) or a rank-named log; a process the script forks or spawns without one (a DataLoader worker,
a multiprocessing pool) writes a log too, but it is not a rank and is never compared with the ranks.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # a name for annotations only: `alive` is on every command's start (the CLI's
    # SIGTERM handling), which must not load the trace model
    from fxlens.trace.model import RankModel


def alive(pid: int) -> bool:
    """Whether process `pid` exists (someone else's counts: it cannot be signalled, but it lives)."""
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def mark_workers(models: list[RankModel], script_pids: dict[int, int | None]) -> None:
    """Mark the logs of worker processes (`worker`, `worker_of`): a rank is a process of a process
    group (torch logs its rank) or a rank-named log; a process the script forked or spawned without
    one (a DataLoader worker, a multiprocessing pool) writes its own log, but it is not a rank, and
    must never be compared with the ranks as one ("RANK DIVERGENCE" in a job with no collectives).

    With the pids of the processes fxlens started the script in (`script_pids`), every other log is
    a worker's. Without (a bare TORCH_TRACE), per rank the log of the lowest pid is the rank (a
    parent starts before its children) and the others its workers; logs without a rank are workers
    of the job when some log has a rank, else all but the lowest pid's.
    """
    if len(models) < 2:
        return
    if script_pids and any(m.pid in script_pids for m in models):
        ranks_of_scripts = {r for r in script_pids.values() if r is not None}
        only = next(iter(ranks_of_scripts)) if len(ranks_of_scripts) == 1 else None
        for m in models:
            if m.pid not in script_pids:
                m.worker, m.worker_of = True, m.rank if m.rank is not None else only
        return
    by_rank: dict[int | None, list[RankModel]] = {}
    for m in models:
        by_rank.setdefault(m.rank, []).append(m)
    ranked = any(r is not None for r in by_rank)
    for rank, ms in by_rank.items():
        ms = sorted(ms, key=lambda m: (m.pid is None, m.pid or 0))
        workers = ms if rank is None and ranked else ms[1:]
        for m in workers:
            m.worker, m.worker_of = True, rank
