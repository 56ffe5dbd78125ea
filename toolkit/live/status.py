"""The live status line and event lines, as text (no terminal handling here: `fxlens.live.terminal`).

fxlens | compiling 0/3 forward (train.py:12) | inductor: codegen 4.2s | 5 graphs, 2 breaks, 3 recompiles, 0 failures
fxlens | ranks 0-1 of 4 compiling: 0/3 forward (train.py:12) | inductor 4.2s | 5 graphs, ...
fxlens | not compiling (last: 0/3 forward, 4.2s) | 5 graphs, 2 breaks, 3 recompiles, 0 failures
fxlens compiling 0/3 forward | codegen 4.2s | 5 graphs, 2 breaks, 3 recompiles   (80 columns)
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
    """One line saying what torch.compile is doing now; fitted to `width` columns (0: not cut).

    Too wide for the terminal, the line takes a compact form before anything is cut: the counts
    and (while compiling) the stage and its clock stay, and the place gives way first
    (`fxlens 0/3 forward | codegen 4.2s | 5g 2b 3r 0f` at 40 columns)."""
    now = time.time() if now is None else now
    active = state.compiling()
    c = state.counts()
    if active:
        heads, stages = _compiling(state, active[0], now)
    elif state.last is not None:
        last = f"{state.last.compile_id} {state.last.function}".strip()
        took = f", {state.last.seconds:.1f}s" if state.last.seconds is not None else ""
        heads, stages = [f"not compiling (last: {last}{took})", f"idle (last {last})", "idle"], [""]
    else:
        return _clean("fxlens | waiting for the first compile", width)
    full = " | ".join(x for x in ("fxlens", heads[0], stages[0], counts_text(state)) if x)
    if not width or len(_clean(full, 0)) <= width:
        return _clean(full, width)
    for counts in (_counts_compact(c, words=True), _counts_compact(c, words=False)):
        for stage in stages:
            for head in heads:
                text = " | ".join(x for x in (f"fxlens {head}", stage, counts) if x)
                if len(_clean(text, 0)) <= width:
                    return _clean(text, width)
    return _clean(" | ".join(x for x in (f"fxlens {heads[-1]}", stages[-1], counts) if x), width)


def _compiling(state: LiveState, c, now: float) -> tuple[list[str], list[str]]:
    """(the place, longest first; the stage and clock, longest first) of compile C."""
    what = f"{c.compile_id} {c.function}".strip()
    where = f" ({short_file(c.file)}:{c.line})" if c.file else ""
    ranks = [r for r in state.ranks if r is not None]
    if len(ranks) > 1:
        busy = ranks_text(state.compiling_ranks())
        s = "s" if len(state.compiling_ranks()) > 1 else ""
        heads = [
            f"rank{s} {busy} of {len(ranks)} compiling: {what}{where}",
            f"rank{s} {busy}/{len(ranks)}: {what}",
        ]
        heads.append(f"r{busy}: {c.compile_id}")
    else:
        heads = [f"compiling {what}{where}", f"compiling {what}", what, c.compile_id]
    clock = f"{max(0.0, now - c.started):.1f}s"
    inner = c.stage.rsplit(": ", 1)[-1]  # "inductor: codegen" -> "codegen"
    stages = [f"{c.stage} {clock}", f"{inner} {clock}", clock] if c.stage else [clock]
    return heads, stages


def _counts_compact(counts: dict[str, int], words: bool) -> str:
    """`5 graphs, 2 breaks` (zero counts but graphs left out), or `5g 2b 0r 0f` (every count)."""
    if words:
        return ", ".join(f"{n} {k if n != 1 else k[:-1]}" for k, n in counts.items() if n or k == "graphs")
    return " ".join(f"{n}{k[0]}" for k, n in counts.items())


def _clean(text: str, width: int) -> str:
    text = for_terminal(text).replace("\n", " ")
    if width and len(text) > width:
        text = text[: max(0, width - 3)] + "..."
    return text


def event_line(event: Event) -> str:
    """`fxlens: new graph break at train.py:42 in forward: ...` (with the rank under torchrun)."""
    rank = f"[rank {event.rank}] " if event.rank is not None else ""
    return for_terminal(f"fxlens: {rank}{event.text}").replace("\n", " ")
