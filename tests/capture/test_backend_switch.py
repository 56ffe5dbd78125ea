"""torch.compile running another backend than the script asked for, said in the report: a
`bisect_status.txt` an interrupted CompilerBisector run left in the inductor cache dir, and the
environment variables (fxlens.capture.backend_switch)."""

from __future__ import annotations

import json

import pytest
from capture_helpers import fxlens

from fxlens.capture.backend_switch import backend_switches, inductor_cache_dir

SCRIPT = """
import torch

@torch.compile(backend="inductor")
def f(x):
    return x.sin() + 1

f(torch.randn(8))
"""


def test_switches_read_from_env_and_a_leftover_bisect_dir(tmp_path):
    env = {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path)}
    assert inductor_cache_dir(env) == tmp_path and backend_switches(env) == []
    (tmp_path / "bisect").mkdir()
    (tmp_path / "bisect" / "bisect_status.txt").write_text("backend=aot_eager\nsubsystem=decomposition\n")
    (left,) = backend_switches(env)
    assert left["backend"] == "aot_eager" and "bisect_status.txt" in left["source"]
    assert [
        s["backend"]
        for s in backend_switches({**env, "TORCH_BISECT_BACKEND": "eager", "TORCH_COMPILE_BACKEND": "x"})
    ] == [
        "eager",
        "x",
    ]


@pytest.mark.slow  # one `fxlens run` (~10 s on the shared machine)
def test_a_leftover_bisect_state_is_the_report_headline(tmp_path):
    """Ground truth from torch itself: with the state file, inductor never ran (no output code)."""
    cache = tmp_path / "cache"
    (cache / "bisect").mkdir(parents=True)
    (cache / "bisect" / "bisect_status.txt").write_text("backend=eager\n")
    script = tmp_path / "f.py"
    script.write_text(SCRIPT)
    out = tmp_path / "r.json"
    proc = fxlens(
        "run", "--session", tmp_path / "s", "--json", out, script, env={"TORCHINDUCTOR_CACHE_DIR": str(cache)}
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    trace = "".join(p.read_text() for p in (tmp_path / "s" / "trace").glob("*.log"))
    assert '"dynamo_output_graph"' in trace and '"inductor_output_code"' not in trace  # torch ran eager
    (h,) = [h for h in json.loads(out.read_text())["headlines"] if h["kind"] == "backend_switched"]
    assert h["message"].startswith(
        "torch.compile ran backend eager, not inductor (what the script asked for)"
    )
    assert "bisect_status.txt" in h["message"] and "compiler_bisector end" in h["fix"]
    assert "torch.compile ran backend eager" in proc.stdout
