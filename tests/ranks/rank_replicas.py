"""Grow real traces into N-rank jobs (tests and bench/ranks.py).

`replicate`: the real 2-rank gloo trace in tests/data/ranks. Rank 0's log is copied to every rank but
the outliers, which get rank 1's log (rank 1 recompiled on a short last batch). Only the rank numbers
change: the records stay torch's own, byte for byte.

`replicate_logs`: any two real single-process logs (one for most ranks, one for the outliers), the
rank in each file's name (as torchrun names them) and `renumber(text, rank)` applied to each copy.
"""

from __future__ import annotations

import gzip
import hashlib
import re
from collections.abc import Callable
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "data"


def _source(rank: int) -> str:
    return gzip.decompress((DATA / "ranks" / f"rank_{rank}.log.gz").read_bytes()).decode()


def inductor_log(variant: str) -> str:
    """A real inductor trace of tests/data/inductor ("fused" or "scalar"; see record_inductor.py)."""
    return gzip.decompress((DATA / "inductor" / f"{variant}.log.gz").read_bytes()).decode()


_HAS_PAYLOAD = re.compile(r'"has_payload": "[0-9a-f]{32}"')


def rehash(text: str) -> str:
    """Each record's `has_payload` set to the md5 of its payload as it now reads: a copy whose rank
    numbers were changed stays a log torch could have written (fxlens checks the md5s)."""
    lines = text.split("\n")
    out, i = [], 0
    while i < len(lines):
        line, j = lines[i], i + 1
        while j < len(lines) and lines[j].startswith("\t"):
            j += 1
        if '"has_payload"' in line and not line.startswith("\t"):
            payload = "\n".join(x[1:] for x in lines[i + 1 : j])
            line = _HAS_PAYLOAD.sub(f'"has_payload": "{hashlib.md5(payload.encode()).hexdigest()}"', line)
        out.append(line)
        out.extend(lines[i + 1 : j])
        i = j
    return "\n".join(out)


def replicate(out: Path, n: int, outliers: tuple[int, ...] = (777,)) -> Path:
    """Write an `n`-rank TORCH_TRACE directory to `out`: rank 1's log at each outlier, rank 0's elsewhere."""
    out.mkdir(parents=True, exist_ok=True)
    alike, odd = _source(0), _source(1)
    for r in range(n):
        text, src = (odd, 1) if r in outliers else (alike, 0)
        text = rehash(re.sub(rf'"rank": {src}\b', f'"rank": {r}', text))
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
        text = rehash(renumber(odd if r in outliers else alike, r))
        (out / f"dedicated_log_torch_trace_rank_{r}_replica.log").write_text(text)
    return out
