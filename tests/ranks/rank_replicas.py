"""Grow the real 2-rank gloo trace in tests/data/ranks into an N-rank job (tests and bench/ranks.py).

Rank 0's log is copied to every rank but the outliers, which get rank 1's log (rank 1 recompiled on a
short last batch). Only the rank numbers change: the records stay torch's own, byte for byte.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "data" / "ranks"


def _source(rank: int) -> str:
    return gzip.decompress((DATA / f"rank_{rank}.log.gz").read_bytes()).decode()


def replicate(out: Path, n: int, outliers: tuple[int, ...] = (777,)) -> Path:
    """Write an `n`-rank TORCH_TRACE directory to `out`: rank 1's log at each outlier, rank 0's elsewhere."""
    out.mkdir(parents=True, exist_ok=True)
    alike, odd = _source(0), _source(1)
    for r in range(n):
        text, src = (odd, 1) if r in outliers else (alike, 0)
        text = re.sub(rf'"rank": {src}\b', f'"rank": {r}', text)
        (out / f"dedicated_log_torch_trace_rank_{r}_replica.log").write_text(text)
    return out
