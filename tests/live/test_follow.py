"""The live follower on traces written while it reads: a real 2-rank gloo trace and a real inductor
trace, appended in steps cut at arbitrary bytes (torn lines, payloads split, rank 1's log appearing
later), checked against what the report reads from the finished trace."""

from __future__ import annotations

import gzip
import random
import re
from pathlib import Path

import pytest

from fxlens.live.state import LiveState
from fxlens.live.status import status_line
from fxlens.live.tail import LogTail, TraceTail
from fxlens.report.build import build_report
from fxlens.trace.session import Session

DATA = Path(__file__).parents[1] / "data"
RANKS = {0: DATA / "ranks" / "rank_0.log.gz", 1: DATA / "ranks" / "rank_1.log.gz"}


def _ground_truth(trace: Path) -> dict:
    """What `fxlens report` says of the finished trace, in the live view's terms."""
    report = build_report(Session.open(trace))
    return {
        "graphs": len({g["compile_id"] for g in report["graphs"]}),
        "breaks": len({(b["file"], b["line"], b["reason"]) for b in report["graph_breaks"]}),
        "recompiles": len({r["compile_id"] for r in report["recompiles"]}),
        "failures": len({(f["compile_id"], f["fail_type"]) for f in report.get("failures") or []}),
    }


def _write_in_steps(tmp_path: Path, seed: int):
    """Yield after each step of writing the two ranks' logs into tmp_path/trace (rank 1 starts late)."""
    trace = tmp_path / "trace"
    trace.mkdir()
    datas = {r: gzip.decompress(p.read_bytes()) for r, p in RANKS.items()}
    pos = dict.fromkeys(datas, 0)
    rng = random.Random(seed)
    step = 0
    while any(pos[r] < len(d) for r, d in datas.items()):
        for r, d in datas.items():
            if r == 1 and step < 3:
                continue  # rank 1's log appears only after a few polls
            n = rng.randint(1, 6000)
            with open(trace / f"dedicated_log_torch_trace_rank_{r}_x.log", "ab") as f:
                f.write(d[pos[r] : pos[r] + n])
            pos[r] += n
        step += 1
        yield trace


def test_follower_in_steps_matches_the_report(tmp_path):
    state, tail = LiveState(), None
    seen_compiling: set[tuple] = set()
    lines = []
    for trace in _write_in_steps(tmp_path, seed=7):
        tail = tail or TraceTail(trace)
        state.update(tail.poll())
        for c in state.compiling():
            seen_compiling.add((c.rank, c.compile_id, c.function, c.stage))
        lines.append(status_line(state, width=200))
    state.update(tail.poll())
    assert state.counts() == _ground_truth(trace)
    assert state.counts()["recompiles"] == 1  # rank 1's short last batch (see record_gloo.py)
    assert state.compiling() == [] and state.ranks == {0, 1}
    # compiles were seen in progress, placed at the user's function, with torch's stage
    assert {(r, cid, fn) for r, cid, fn, _ in seen_compiling} >= {
        (0, "0/0", "forward"),
        (1, "0/1", "forward"),
    }
    assert {stage for *_, stage in seen_compiling} >= {"dynamo", "aot_autograd"}
    assert any(
        re.search(r"ranks? [\d, -]+ of 2 compiling: 0/\d forward \(record_gloo\.py:\d+\)", s) for s in lines
    )
    # each new cause once, with the user's line; the recompile names the changed input and its values
    (rec,) = [e for e in state.events if e.kind == "recompile"]
    assert rec.rank == 1 and "input `x`, dim 0 (expected 8, actual 5)" in rec.text
    assert rec.file.endswith("record_gloo.py") and rec.line > 0


def test_torn_lines_and_split_payloads_wait_for_their_end(tmp_path):
    """A record is handed on only when whole: a line cut mid-way, or a payload whose md5 does not
    match torch's yet, waits; the same bytes written at once give the same records."""
    data = gzip.decompress(RANKS[1].read_bytes())
    log = tmp_path / "dedicated_log_torch_trace_rank_1_x.log"
    whole = LogTail(_write(tmp_path / "all.log", data)).poll()
    got = []
    tail = LogTail(log)
    cut = data.index(b'{"artifact": {"name": "recompile_reasons"')
    cut = data.index(b"\n\t", cut) + 5  # inside the recompile reasons' payload
    for chunk in (data[: cut - 60], data[cut - 60 : cut], data[cut:]):
        with open(log, "ab") as f:
            f.write(chunk)
        got.append(tail.poll())
    assert not any("recompile_reasons" in str(r.meta) for r in got[0] + got[1])  # torn / unfinished
    flat = [r for step in got for r in step]
    assert [(r.line_no, r.payload) for r in flat] == [(r.line_no, r.payload) for r in whole]
    assert tail.bytes_read == len(data)  # each byte read once


def test_status_line_says_what_compiles(tmp_path):
    trace = tmp_path / "trace"
    trace.mkdir()
    data = gzip.decompress((DATA / "inductor" / "fused.log.gz").read_bytes())
    # up to inductor's codegen of the first compile: a compile in progress, in inductor
    cut = data.index(b'"name": "code_gen"')
    cut = data.index(b"\n\t}\n", cut) + 4
    _write(trace / "dedicated_log_torch_trace_x.log", data[:cut])
    state = LiveState()
    state.update(TraceTail(trace).poll())
    (c,) = state.compiling()
    line = status_line(state, now=c.started + 4.25, width=300)
    assert re.match(
        r"fxlens \| compiling 0/0 \S+ \(\S+:\d+\) \| inductor: codegen 4\.2s \| 1 graph, ", line
    ), line
    narrow = status_line(state, now=c.started + 1, width=40)  # compact: the stage and counts stay
    assert len(narrow) <= 40 and "1.0s" in narrow and "1 graph" in narrow, narrow


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_a_running_session_is_told_from_a_finished_or_killed_one(tmp_path):
    import json
    import os
    import subprocess
    import sys

    from fxlens.live.follow import run_in_progress

    s = tmp_path / "s"
    s.mkdir()
    (s / "session.json").write_text(json.dumps({"exit_code": None, "started": 1}))
    (s / ".lock").write_text(str(os.getpid()))  # this process holds it: alive
    assert run_in_progress(s)
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    (s / ".lock").write_text(gone.stdout.strip())  # a run killed by SIGKILL: no exit code, no process
    assert not run_in_progress(s)
    (s / ".lock").write_text(str(os.getpid()))
    (s / "session.json").write_text(json.dumps({"exit_code": 0, "finished": 2}))
    assert not run_in_progress(s)
    assert not run_in_progress(tmp_path)  # not a session


FIXTURES = [
    *(DATA / "traces" / v / "dedicated_log_torch_trace.log" for v in ("2.13.0", "2.14.1", "2.15.0")),
    DATA / "live" / "failures.log.gz",  # a backend failure and a recompile-limit hit (record_failures.py)
]


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: p.parent.name if p.suffix == ".log" else p.stem)
def test_events_once_per_cause_as_the_report_says(fixture, tmp_path):
    """Read in steps, every fixture gives the report's counts, and one event per break site,
    failure and limit hit, at the report's user line."""
    data = gzip.decompress(fixture.read_bytes()) if fixture.suffix == ".gz" else fixture.read_bytes()
    log = tmp_path / "dedicated_log_torch_trace.log"
    log.write_bytes(b"")
    tail, state = LogTail(log), LiveState()
    for i in range(0, len(data), 4096):
        with open(log, "ab") as f:
            f.write(data[i : i + 4096])
        state.update(tail.poll())
    report = build_report(Session.open(log))
    assert state.counts() == _ground_truth(log)
    where = {
        kind: sorted((Path(e.file).name, e.line) for e in state.events if e.kind == kind)
        for kind in ("break", "failure", "limit")
    }
    assert where["break"] == sorted({(Path(b["file"]).name, b["line"]) for b in report["graph_breaks"]})
    assert where["failure"] == sorted((Path(f["file"]).name, f["line"]) for f in report.get("failures") or [])
    assert where["limit"] == sorted((Path(h["file"]).name, h["line"]) for h in report["recompile_limit_hits"])
    recompiled = {r["function"] for r in report["recompiles"]}
    assert {
        e.text.split(" (")[0].removeprefix("recompile of ") for e in state.events if e.kind == "recompile"
    } == recompiled
    if fixture.suffix == ".gz":  # the failure and the limit hit, in words
        (failure,) = [e.text for e in state.events if e.kind == "failure"]
        assert "BackendCompilerFailed" in failure and "this backend cannot compile anything" in failure
        (limit,) = [e.text for e in state.events if e.kind == "limit"]
        assert limit.startswith("sizes (") and "hit the recompile limit" in limit
