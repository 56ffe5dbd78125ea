"""The live status line and event lines, as text (no terminal handling here: `fxlens.live.terminal`).

fxlens | compiling 0/3 forward (train.py:12) | inductor: codegen 4.2s | 5 graphs, 2 breaks, 3 recompiles, 0 failures
fxlens | ranks 0-1 of 4 compiling: 0/3 forward (train.py:12) | inductor 4.2s | 5 graphs, ...
fxlens | not compiling (last: 0/3 forward, 4.2s) | 5 graphs, 2 breaks, 3 recompiles, 0 failures
"""

from __future__ import annotations

import time

from fxlens.live.state import Event, LiveState, short_file
from fxlens.report.ranks import rank_ranges
from fxlens.trace.sanitize import for_terminal


def ranks_text(ranks: list) -> str:
    """`0-3, 7` for ranks [0, 1, 2, 3, 7] (the report's rank ranges; a rank-less process left out)."""
    return rank_ranges([r for r in ranks if r is not None])


def counts_text(state: LiveState) -> str:
    c = state.counts()
    return ", ".join(f"{n} {k if n != 1 else k[:-1]}" for k, n in c.items())


def status_line(state: LiveState, now: float | None = None, width: int = 0) -> str:
    """One line saying what torch.compile is doing now; cut to `width` columns (0: not cut)."""
    now = time.time() if now is None else now
    active = state.compiling()
    if active:
        c = active[0]  # the longest-running compile
        where = f"{c.compile_id} {c.function}".strip() + (
            f" ({short_file(c.file)}:{c.line})" if c.file else ""
        )
        ranks = [r for r in state.ranks if r is not None]
        if len(ranks) > 1:
            busy = state.compiling_ranks()
            head = f"rank{'s' if len(busy) > 1 else ''} {ranks_text(busy)} of {len(ranks)} compiling: {where}"
        else:
            head = f"compiling {where}"
        secs = max(0.0, now - c.started)
        stage = f"{c.stage} {secs:.1f}s" if c.stage else f"{secs:.1f}s"
        text = f"fxlens | {head} | {stage} | {counts_text(state)}"
    elif state.last is not None:
        took = f", {state.last.seconds:.1f}s" if state.last.seconds is not None else ""
        text = f"fxlens | not compiling (last: {state.last.compile_id} {state.last.function}{took}) | {counts_text(state)}"
    else:
        text = "fxlens | waiting for the first compile"
    text = for_terminal(text).replace("\n", " ")
    if width and len(text) > width:
        text = text[: max(0, width - 3)] + "..."
    return text


def event_line(event: Event) -> str:
    """`fxlens: new graph break at train.py:42 in forward: ...` (with the rank under torchrun)."""
    rank = f"[rank {event.rank}] " if event.rank is not None else ""
    return for_terminal(f"fxlens: {rank}{event.text}").replace("\n", " ")
