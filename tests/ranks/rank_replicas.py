"""Grow real traces into N-rank jobs (tests and bench/ranks.py).

`replicate`: the real 2-rank gloo trace in tests/data/ranks. Rank 0's log is copied to every rank but
the outliers, which get rank 1's log (rank 1 recompiled on a short last batch). Only the rank numbers
change: the records stay torch's own, byte for byte.

`replicate_logs`: any two real single-process logs (one for most ranks, one for the outliers), the
rank in each file's name (as torchrun names them) and `renumber(text, rank)` applied to each copy.
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Callable
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "data"


def _source(rank: int) -> str:
    return gzip.decompress((DATA / "ranks" / f"rank_{rank}.log.gz").read_bytes()).decode()


def inductor_log(variant: str) -> str:
    """A real inductor trace of tests/data/inductor ("fused" or "scalar"; see record_inductor.py)."""
    return gzip.decompress((DATA / "inductor" / f"{variant}.log.gz").read_bytes()).decode()


def replicate(out: Path, n: int, outliers: tuple[int, ...] = (777,)) -> Path:
    """Write an `n`-rank TORCH_TRACE directory to `out`: rank 1's log at each outlier, rank 0's elsewhere."""
    out.mkdir(parents=True, exist_ok=True)
    alike, odd = _source(0), _source(1)
    for r in range(n):
        text, src = (odd, 1) if r in outliers else (alike, 0)
        text = re.sub(rf'"rank": {src}\b', f'"rank": {r}', text)
        (out / f"dedicated_log_torch_trace_rank_{r}_replica.log").write_text(text)
    return out


def replicate_logs(
    out: Path,
    n: int,
    alike: str,
    odd: str,
    outliers: tuple[int, ...],
    renumber: Callable[[str, int], str] = lambda text, rank: text,
) -> Path:
    """Write an `n`-rank TORCH_TRACE directory to `out`: `odd` at each outlier, `alike` elsewhere."""
    out.mkdir(parents=True, exist_ok=True)
    for r in range(n):
        text = renumber(odd if r in outliers else alike, r)
        (out / f"dedicated_log_torch_trace_rank_{r}_replica.log").write_text(text)
    return out
