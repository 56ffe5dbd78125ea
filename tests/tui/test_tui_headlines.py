"""The TUI leads with the report's headline when the tables would hide it: here torch gave up on a
frame (a break inside a try block), so it runs eagerly, and no graph was captured at all."""

import json
import subprocess
import sys
from pathlib import Path

from tui_helpers import make_app, wait_loaded

from fxlens.tui.widgets import Info

SCRIPT = Path(__file__).parents[1] / "capture" / "scripts" / "gives_up.py"


async def test_headline_of_a_frame_torch_gave_up_on(tmp_path):
    session, out = tmp_path / "s", tmp_path / "r.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "fxlens.cli",
            "run",
            "--session",
            str(session),
            "--json",
            str(out),
            str(SCRIPT),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(out.read_text())
    # torch's own records: one compile that failed with Unsupported after a break it could not resume
    (eager,) = report["eager_frames"]
    assert (eager["function"], eager["line"]) == ("g", 11) and report["failures"] == []
    assert report["graph_breaks"] == []  # the same event, counted once
    kinds = [h["kind"] for h in report["headlines"]]
    assert kinds == ["no_graph", "eager_frame"]
    app = make_app(session, tmp_path)
    async with app.run_test(size=(200, 50)) as pilot:
        await wait_loaded(app, pilot)
        notice = app.screen.query_one("#notice", Info).plain
        assert "captured no graph" in notice and "(+1 more)" in notice
