"""Read a job's per-rank logs on all cores: a process pool over the logs, the models in rank order.

Reading is CPU-bound JSON decoding, one log per rank, so ranks spread over processes with nothing
shared. Each worker returns the rank's model (the records the report and TUI keep, payloads still
on disk as byte spans), so the parent holds what the report keeps, never a log's text. Small jobs are
read in this process: a pool costs ~0.1 s to start, more than a few megabytes take to read.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import fxlens.trace
from fxlens.config import read_jobs
from fxlens.trace.model import RankModel, build_rank_model
from fxlens.trace.reader import scan_log
from fxlens.trace.sources import SourceSnapshot, using

# below this many bytes of logs in all, a pool's start-up costs more than it saves
PARALLEL_MIN_BYTES = 8 << 20


def read_one(path: Path, sources: SourceSnapshot | None = None) -> tuple[RankModel | None, str]:
    """One log's model, or None and why it could not be read (one bad rank never hides the others).

    `sources`: the session's kept source lines, which the parsers consult first (fxlens.trace.sources).
    """
    try:
        with using(sources):
            return build_rank_model(scan_log(path)), ""
    except Exception as e:  # noqa: BLE001
        return None, f"{path.name}: unreadable ({type(e).__name__}: {e})"


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def jobs_for(logs: list[Path]) -> int:
    """How many processes read `logs`: FXLENS_READ_JOBS, else one per core but one for a big job on
    3 cores or more, else 1 (in-process)."""
    asked = read_jobs()
    if asked:
        return max(1, min(asked, len(logs)))
    if len(logs) < 2:
        return 1
    size = 0
    for p in logs:
        try:
            size += p.stat().st_size
        except OSError:
            pass
        if size >= PARALLEL_MIN_BYTES:
            # the parent is busy too (it unpickles each model and builds the report): one core is
            # left to it. On 2 cores that means no pool: measured there (BENCHMARKS.md, "Many
            # ranks"), 2 workers and the parent were slower than reading in-process
            jobs = min(_cores() - 1, len(logs))
            return jobs if jobs >= 2 else 1
    return 1


def _context():
    import multiprocessing  # only when a pool is used: a small log's start-up does not pay for it

    # fork when this process runs one thread: workers start at once and nothing is re-imported. With
    # threads (the TUI reads from one) forking can deadlock on a lock another thread held, so then
    # forkserver: children fork from a clean server that imported the reader once.
    methods = multiprocessing.get_all_start_methods()
    if threading.active_count() == 1 and "fork" in methods:
        return multiprocessing.get_context("fork")
    if "forkserver" in methods:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["fxlens.trace.parallel"])
        return ctx
    return multiprocessing.get_context("spawn")


def read_models(
    logs: list[Path], sources: SourceSnapshot | None = None
) -> Iterator[tuple[Path, RankModel | None, str]]:
    """(log, model or None, why not) for each log, in the order given, as soon as each is read."""
    items = _read_models(logs, sources)
    hook = fxlens.trace.progress_hook  # the CLI's progress line (see fxlens/trace/__init__.py)
    yield from hook(items, len(logs)) if hook else items


def _read_models(
    logs: list[Path], sources: SourceSnapshot | None = None
) -> Iterator[tuple[Path, RankModel | None, str]]:
    jobs = jobs_for(logs)
    done = 0
    if jobs > 1:
        from concurrent.futures import ProcessPoolExecutor
        from concurrent.futures.process import BrokenProcessPool

        # a few logs per task: fewer round trips than one at a time, still balanced across workers
        chunk = max(1, min(16, len(logs) // (jobs * 4)))
        try:
            with ProcessPoolExecutor(max_workers=jobs, mp_context=_context()) as pool:
                read = functools.partial(read_one, sources=sources)
                for log, (model, why) in zip(logs, pool.map(read, logs, chunksize=chunk)):
                    done += 1
                    yield log, model, why
        except (BrokenProcessPool, OSError, ValueError):
            # no pool here (a worker could not start; under a TUI test harness stdio may have no
            # file descriptor to hand to a forkserver): read the rest in this process
            pass
    for log in logs[done:]:
        yield (log, *read_one(log, sources))
