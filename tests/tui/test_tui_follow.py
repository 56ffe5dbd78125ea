"""`fxlens tui --follow`: the app refreshes while a job is still writing its trace. A real 2-rank
gloo trace is appended in steps while the app runs; the tree, the recompile causes and the live
bar (which ranks compile now) follow, read off the event loop."""

from __future__ import annotations

import gzip
import threading
from pathlib import Path

import pytest
from tui_helpers import wait_loaded

from fxlens.live.follow import Follow
from fxlens.tui.app import FxlensApp, resolve
from fxlens.tui.widgets import CompileTree, Info

pytestmark = pytest.mark.tui
DATA = Path(__file__).parents[1] / "data" / "ranks"


async def _until(pilot, cond, what: str, timeout: float = 20.0) -> None:
    waited = 0.0
    while not cond():
        assert waited < timeout, f"the app never showed {what}"
        await pilot.pause(0.05)
        waited += 0.05


async def test_follow_refreshes_as_the_trace_grows(tmp_path, monkeypatch):
    trace = tmp_path / "trace"
    trace.mkdir()
    logs = {r: gzip.decompress((DATA / f"rank_{r}.log.gz").read_bytes()) for r in (0, 1)}
    dest = {r: trace / f"dedicated_log_torch_trace_rank_{r}_x.log" for r in (0, 1)}
    # rank 1 up to its recompile of forward in progress (its dynamo_start logged, not its end)
    recompile = logs[1].index(b'"frame_compile_id": 1')
    mid = logs[1].index(b"\n", logs[1].index(b'{"dynamo_start"', recompile)) + 1
    threads: set[str] = set()
    real_poll = Follow.poll

    def poll(self):
        threads.add(threading.current_thread().name)
        return real_poll(self)

    monkeypatch.setattr(Follow, "poll", poll)
    app = FxlensApp(
        resolve(str(trace), follow=True), cursor_blink=False, follow=Follow(trace, min_reload_s=0)
    )
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_loaded(app, pilot)
        assert app.data.ranks == [] and "following" in app.main.sub_title  # no log yet
        tree = app.query_one("#tree", CompileTree)
        live = app.query_one("#live", Info)
        assert app.query_one("#notice", Info).plain == "waiting for the job's first trace records"

        dest[0].write_bytes(logs[0][: len(logs[0]) // 2])
        await _until(pilot, lambda: len(tree.root.children) == 1, "rank 0")
        dest[0].write_bytes(logs[0])
        dest[1].write_bytes(logs[1][:mid])
        await _until(pilot, lambda: len(tree.root.children) == 2, "rank 1 joining")
        await _until(pilot, lambda: "rank 1 of 2 compiling: 0/1 forward" in live.plain, "rank 1 compiling")
        assert not app.query_one("#notice", Info).has_class("shown")  # no verdict on a partial trace

        with open(dest[1], "ab") as f:
            f.write(logs[1][mid:])
        await _until(pilot, lambda: "not compiling" in live.plain, "the compile finished")
        await _until(pilot, lambda: app.data.summary and app.data.summary.causes, "the recompile cause")
        (cause,) = app.data.summary.causes
        assert cause["function"] == "forward" and list(cause["ranks"]) == [1]
        assert "1 recompile" in live.plain
        await pilot.press("4")  # the recompiles view shows it
        assert app.current_view == "recompiles"
    assert threads and "MainThread" not in threads  # polled and parsed in workers


@pytest.mark.parametrize(
    ("code", "extra", "said"),
    [
        (1, {}, "the script exited with status 1"),
        (-11, {}, "the script was killed by SIGSEGV"),
        (None, {"interrupted": True}, "interrupted (Ctrl-C or SIGTERM)"),
        (0, {}, "the script exited with status 0"),
    ],
    ids=["status_1", "sigsegv", "interrupted", "ok"],
)
async def test_follow_says_how_the_run_ended(tmp_path, code, extra, said):
    """A session as `fxlens run` writes it: session.json without an exit code and the lock of a live
    process while it runs (this test's own pid), then the end it records (capture/command.py)."""
    import json
    import os

    from fxlens.report.exits import how_it_ended

    session = tmp_path / "s"
    (session / "trace").mkdir(parents=True)
    info = {"script": str(tmp_path / "train.py"), "argv": [], "exit_code": None, "started": 1.0}
    (session / "session.json").write_text(json.dumps(info))
    (session / ".lock").write_text(str(os.getpid()))
    logs = gzip.decompress((DATA / "rank_0.log.gz").read_bytes())
    (session / "trace" / "dedicated_log_torch_trace_rank_0_x.log").write_bytes(logs)
    app = FxlensApp(
        resolve(str(session), follow=True), cursor_blink=False, follow=Follow(session, min_reload_s=0)
    )
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_loaded(app, pilot)
        live = app.query_one("#live", Info)
        await _until(pilot, lambda: "following" in live.plain, "the live bar")
        (session / "session.json").write_text(
            json.dumps({**info, "exit_code": code, "finished": 2.0, **extra})
        )
        (session / ".lock").unlink()
        await _until(pilot, lambda: "run ended" in app.main.sub_title, "the end of the run")
        await _until(pilot, lambda: f"run ended: {said}" in live.plain, "how the run ended")
        if code is not None:  # the words `fxlens run` prints for that status
            assert said == f"the script {how_it_ended(code)}"
        notice = app.query_one("#notice", Info)
        failed = code != 0
        assert ("the run failed: " + said in notice.plain) is failed, notice.plain
