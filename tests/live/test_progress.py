"""fxlens's own long waits: one progress line, on a terminal only, with each step's time."""

from __future__ import annotations

import gzip
import io
import re
import sys
from pathlib import Path

import pytest

from fxlens.live import progress
from fxlens.trace.parallel import read_models

RANKS = Path(__file__).parents[1] / "data" / "ranks"


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def terminal(monkeypatch):
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.setattr(progress, "AFTER_S", 0.0)
    monkeypatch.setattr(progress, "_columns", lambda stream: 200)
    progress.enable()
    yield _Tty()
    progress.enable(False)


def test_line_redrawn_with_each_steps_time_and_cleared(terminal):
    p = progress.Progress("doctor", "run", total=4, stream=terminal)
    p.step("eager, round 1")
    p.step("compiled, round 1")
    progress.echo("  a line for good", stream=terminal)
    p.close()
    out = terminal.getvalue()
    draws = re.findall(r"\r\x1b\[K(fxlens doctor: run [^\r\n]*)", out)
    assert re.fullmatch(r"fxlens doctor: run 1/4 \(eager, round 1\) · \d+\.\ds · last step \d+ms", draws[0])
    assert draws[1].startswith("fxlens doctor: run 2/4 (compiled, round 1) · ")
    # the echoed line went above the progress line (cleared first, redrawn after), then it was cleared
    assert "\r\x1b[K  a line for good\n\r\x1b[Kfxlens doctor: run 2/4" in out
    assert out.endswith("\r\x1b[K")
    assert [label for label, _ in p.steps] == ["eager, round 1", "compiled, round 1"]
    assert all(s >= 0 for _, s in p.steps)


def test_nothing_drawn_off_a_terminal_or_outside_the_cli(monkeypatch, terminal):
    plain = io.StringIO()
    p = progress.Progress("bisect", "run", stream=plain)
    p.step("stage eager")
    p.close()
    assert plain.getvalue() == "" and len(p.steps) == 1
    progress.enable(False)  # a library caller, a test, the TUI: never drawn
    q = progress.Progress("bisect", "run", stream=terminal)
    q.step("x")
    assert terminal.getvalue() == ""


def test_reading_many_ranks_reports_each_log(terminal, monkeypatch, tmp_path):
    logs = []
    for r in (0, 1):
        p = tmp_path / f"dedicated_log_torch_trace_rank_{r}_x.log"
        p.write_bytes(gzip.decompress((RANKS / f"rank_{r}.log.gz").read_bytes()))
        logs.append(p)
    monkeypatch.setattr(sys, "stderr", terminal)
    got = [(log.name, model.rank) for log, model, _ in read_models(logs)]
    assert got == [(logs[0].name, 0), (logs[1].name, 1)]
    out = terminal.getvalue()
    assert re.search(
        r"fxlens: reading log 1/2 \(dedicated_log_torch_trace_rank_0_x\.log\) · [\d.]+s · last step", out
    )
    assert "fxlens: reading log 2/2" in out and out.endswith("\r\x1b[K")


def test_a_running_step_is_drawn_before_it_ends_and_redrawn_while_it_runs(terminal, monkeypatch):
    # doctor's first run takes ~40 s here: its line must be up, its clock moving, long before that
    import time

    monkeypatch.setattr(progress, "TICK_S", 0.05)
    p = progress.Progress("doctor", "run", total=2, stream=terminal)
    p.begin("eager, round 1")
    deadline = time.monotonic() + 10
    while terminal.getvalue().count("\r\x1b[K") < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    draws = re.findall(r"\r\x1b\[K(fxlens doctor: run [^\r\n]*)", terminal.getvalue())
    assert len(draws) >= 3 and not p.steps, draws  # drawn while no step has ended
    assert all(d.startswith("fxlens doctor: run 1/2 (eager, round 1) · ") for d in draws), draws
    clocks = [float(re.search(r"this step (\d+)ms", d)[1]) for d in draws]
    assert clocks == sorted(clocks) and clocks[-1] > clocks[0], draws  # redrawn with time moving
    p.step("eager, round 1")
    assert re.findall(r"run [^\r]*", terminal.getvalue())[-1].startswith("run 1/2 (eager, round 1) · ")
    p.close()
    after = terminal.getvalue()
    time.sleep(0.2)  # the ticker is stopped: nothing is drawn after the line was cleared
    assert terminal.getvalue() == after and after.endswith("\r\x1b[K")


def test_clear_stops_a_ticking_line_not_yet_drawn(terminal, monkeypatch):
    # an error before the line's first draw: nothing may be drawn over the error message after it
    import time

    monkeypatch.setattr(progress, "TICK_S", 0.02)
    p = progress.Progress("doctor", "run", total=2, stream=terminal, after_s=0.3)
    p.begin("eager, round 1")
    progress.clear()
    time.sleep(0.5)
    assert "fxlens doctor" not in terminal.getvalue()
