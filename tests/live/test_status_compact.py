"""The status line of `fxlens run` on an 80-column terminal (79 drawn): compact, never cut.

States are read from real traces cut part-way (an inductor compile in codegen; two gloo ranks); the
full line (no width) is the ground truth of what the compact one must keep: the compile id, the
stage and its clock, and every count that is not zero (the counts match the report: test_follow).
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

from fxlens.live.state import LiveState
from fxlens.live.status import status_line
from fxlens.live.tail import TraceTail

DATA = Path(__file__).parents[1] / "data"
WIDTH = 79  # the terminal's 80 columns less the one the cursor sits in


def _state(tmp_path: Path, logs: list[str], cut: float) -> LiveState:
    trace = tmp_path / "trace"
    trace.mkdir()
    for i, name in enumerate(logs):
        data = gzip.decompress((DATA / name).read_bytes())
        (trace / f"dedicated_log_torch_trace_rank_{i}_x.log").write_bytes(data[: int(len(data) * cut)])
    state = LiveState()
    state.update(TraceTail(trace).poll())
    return state


def _counts(line: str) -> dict[str, int]:
    """The counts a line shows, in either form (`2 graphs, 1 recompile` or `2g 0b 1r 0f`)."""
    words = {k[0]: int(n) for n, k in re.findall(r"(\d+) (graph|break|recompile|failure)s?\b", line)}
    symbols = {k: int(n) for n, k in re.findall(r"\b(\d+)([gbrf])\b", line)}
    return words or symbols


CASES = {
    "inductor_codegen": (["inductor/fused.log.gz"], None),
    "two_ranks": (["ranks/rank_0.log.gz", "ranks/rank_1.log.gz"], 2 / 3),
    "failures": (["live/failures.log.gz"], 1 / 2),
}


@pytest.mark.parametrize("case", CASES)
def test_compact_line_keeps_counts_and_stage(tmp_path, case):
    logs, cut = CASES[case]
    if cut is None:  # just after inductor's codegen started: a compile in progress, in inductor
        data = gzip.decompress((DATA / logs[0]).read_bytes())
        at = data.index(b"\n\t}\n", data.index(b'"name": "code_gen"')) + 4
        cut = at / len(data)
    state = _state(tmp_path, logs, cut)
    (c, *_) = state.compiling()
    now = c.started + 12.34
    full, line = status_line(state, now=now), status_line(state, now=now, width=WIDTH)
    assert len(full) > WIDTH, full  # the case needs the compact form
    assert len(line) <= WIDTH and not line.endswith("..."), line
    assert f"{c.compile_id}" in line and "12.3s" in line, line
    inner = c.stage.rsplit(": ", 1)[-1]
    assert inner in line, (c.stage, line)
    want = {k[0]: n for k, n in state.counts().items()}
    shown = _counts(line)
    assert all(shown.get(k) == n for k, n in want.items() if n), (want, line)


def test_idle_line_at_80_columns_keeps_counts(tmp_path):
    state = _state(tmp_path, ["ranks/rank_0.log.gz", "ranks/rank_1.log.gz"], 1.0)
    assert not state.compiling()
    line = status_line(state, width=WIDTH)
    want = {k[0]: n for k, n in state.counts().items()}
    assert len(line) <= WIDTH and all(_counts(line).get(k) == n for k, n in want.items() if n), line
