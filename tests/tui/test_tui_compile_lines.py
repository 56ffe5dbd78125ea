"""The Metrics view shows Dynamo's seconds by source line as a tree (file -> function -> line): for
the whole session (its own row) and per compile (the compile's detail), from a real `fxlens run`."""

import json
import subprocess
import sys
from pathlib import Path

from tui_helpers import make_app, press, wait_loaded

from fxlens.tui.lazy_table import VimTable
from fxlens.tui.widgets import Info

SCRIPT = Path(__file__).parent / "lines_script.py"
LOOP_LINE = next(i for i, t in enumerate(SCRIPT.read_text().splitlines(), 1) if "# the loop" in t)


def _run(tmp_path) -> tuple[Path, dict]:
    session, out = tmp_path / "s", tmp_path / "r.json"
    proc = subprocess.run(
        [sys.executable, "-m", "fxlens.cli", "run", "--session", str(session), "--json", str(out), str(SCRIPT)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return session, json.loads(out.read_text())


async def test_metrics_view_shows_the_line_tree(tmp_path):
    session, report = _run(tmp_path)
    sec = report["compile_lines"]
    assert sec["available"] and sec["loops"][0]["iterations"] == 40
    app = make_app(session, tmp_path)
    async with app.run_test(size=(200, 50)) as pilot:
        await wait_loaded(app, pilot)
        await press(pilot, "7")
        detail = app.query_one("#metrics-detail", Info).plain
        # the compile's own tree: the script's file, its forward, the loop body's line with 40 hits
        assert "Dynamo by source line" in detail
        assert "lines_script.py" in detail and "forward:" in detail
        assert f"{LOOP_LINE + 1}: x = torch.relu(layer(x))" in detail and "40 hits" in detail
        assert "torch/nn/modules/linear.py" in detail  # the inlined library frame, under its file
        table = app.query_one("#metrics-table", VimTable)
        ids = list(table.columns).index("compile id")
        labels = [r[ids] for r in table._rows_plain()]
        assert "by line" in labels  # after the compiles and the cold-start rows
        table.focus()
        await press(pilot, "g", *["j"] * labels.index("by line"))
        detail = app.query_one("#metrics-detail", Info).plain
        assert "by source line" in detail and "unrolling the loop at" in detail
        assert f"lines_script.py:{LOOP_LINE}" in detail
