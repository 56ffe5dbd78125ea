"""tlparse's views in the TUI, on real traces: shape specialisations (Recompiles view) and a
compile's cache outcome and restart reason in full (Metrics view)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tui_helpers import make_app, press, wait_loaded

from fxlens.tui.widgets import Info, VimTable

pytestmark = pytest.mark.tui
SCRIPTS = Path(__file__).resolve().parents[1] / "report" / "scripts"


def _trace(script: str, *args: str):
    def build(d: Path) -> None:
        env = {**os.environ, "TORCH_TRACE": str(d / "trace")}
        proc = subprocess.run(
            [sys.executable, str(SCRIPTS / script), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]

    return build


async def test_specialization_row_and_detail(build_once, tmp_path):
    trace = build_once("specialize", _trace("specialize.py")) / "trace"
    app = make_app(trace, tmp_path)
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_loaded(app, pilot)
        await press(pilot, "4")
        rows = app.query_one("#recompiles-table", VimTable)._rows_plain()
        (spec,) = [r for r in rows if r[0] == "spec"]
        assert spec[1] == "f" and spec[3].startswith("specialised L['x'].size()[0] = 8")
        detail = app.query_one("#recompiles-detail", Info).plain
        assert "guards it added" in detail and "Eq(s" in detail
        assert "specialize.py:8 in f: if x.shape[0] == 8:" in detail


async def test_metrics_detail_has_cache_and_whole_restart_reason(build_once, tmp_path):
    trace = build_once("compile-stages", _trace("compile_stages.py", "aot_eager")) / "trace"
    app = make_app(trace, tmp_path)
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_loaded(app, pilot)
        await press(pilot, "7")
        detail = app.query_one("#metrics-detail", Info).plain
        assert "cache: no compiled-graph cache consulted" in detail  # aot_eager uses none
        assert "restarted (Dynamo analysed the frame again):" in detail
        assert "Explanation: Dynamo does not know how to trace builtin operator `print`" in detail
