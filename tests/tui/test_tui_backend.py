"""The TUI on a trace from fxlens's real Triton backend (slow: Triton's interpreter on CPU)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from tui_helpers import make_app, press, wait_loaded

from fxlens.tui.widgets import CodeView, Info

pytestmark = [pytest.mark.tui, pytest.mark.slow]

SCRIPT = """
import torch

def f(x, w):
    y = torch.relu(x @ w) * 2.0
    return (y.sin() + 1).sum(dim=1)

torch.compile(f, backend="fxlens")(torch.randn(8, 16), torch.randn(16, 16))
"""


async def test_node_to_real_kernel_and_back(tmp_path, monkeypatch):
    (tmp_path / "m.py").write_text(SCRIPT)
    env = {**os.environ, "TORCH_TRACE": str(tmp_path / "trace")}
    subprocess.run(
        [sys.executable, "m.py"], cwd=tmp_path, env=env, check=True, capture_output=True, timeout=600
    )
    monkeypatch.chdir(tmp_path)
    app = make_app(tmp_path / "trace", tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(app, pilot)
        await press(pilot, "t", "g", "j", "l", "j", "enter")
        while app.view().params.get("kind") != "artifact:fxlens_aten_inference_graph":
            await press(pilot, "a")
        await press(pilot, "v", "slash", *"sin", "enter", "o")
        assert app.current_view == "kernels"
        detail = app.query_one("#kernel-detail", Info).plain
        assert "aten.sin.default" in detail and "sin" in detail
        assert "@triton.jit" in app.query_one("#kernel-source", CodeView).text()
        await press(pilot, "o")
        assert app.current_view == "graph" and app.view().selected().name == "sin"
        assert app.view().selected().dtype == "f32" and app.view().selected().shape == "[8, 16]"
