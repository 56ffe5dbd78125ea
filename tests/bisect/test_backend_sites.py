"""Issue 34: bisect, minify and `fxlens run --backend` keep the script's own backend object per
call site, so a graph two compiled closures wrongly share (a missing guard) is shared under fxlens
too. Ground truth: the script run by plain python (scripts/shared_graph.py's docstring)."""

import os
import subprocess
import sys

import pytest
from bisect_helpers import SCRIPTS, ladder_by_hand

SCRIPT = SCRIPTS / "shared_graph.py"
SHARED = "AssertionError: f2 ran f1's graph"
DISTINCT = "RuntimeError: Recompilation triggered with skip_guard_eval_unsafe stance"


def _python(*args, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=300,
    )


def _fxlens(tmp_path, *args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fxlens.cli", *map(str, args)],
        capture_output=True,
        text=True,
        env={**os.environ, "FXLENS_SESSIONS_DIR": str(tmp_path / "sessions")},
        timeout=600,
    )


@pytest.mark.slow  # ~10 s CPU; the repro_cases/fixed_* case of the same bug runs by default
def test_bisect_reproduces_a_graph_wrongly_shared_by_two_closures(bisect):
    # the ladder by hand: the script fails at eager already, and passes without torch.compile
    truth = ladder_by_hand(SCRIPT, [(["eager"], False), (["aot_eager"], False), ([], True)])
    assert truth == [(1, SHARED), (1, SHARED), (0, "")]
    proc, v = bisect(SCRIPT)
    assert proc.returncode == 0, proc.stderr
    assert v["outcome"] == "eager_fails" and v["first_failing_stage"] == "eager"
    assert v["failure"]["error"].startswith(SHARED), v["failure"]
    assert [(s["stage"], s["ok"]) for s in v["stages"]] == [("eager", False), ("no_compile", True)]


@pytest.mark.slow
def test_run_and_minify_keep_shared_and_distinct_backends_apart(tmp_path):
    """~35 s: `fxlens run --backend` on both shapes, and minify's capture run (~20 s)."""
    truth = _python("eager", "distinct")
    assert truth.returncode == 1 and DISTINCT in truth.stderr
    ran = _fxlens(tmp_path, "run", "--backend", "aot_eager", SCRIPT, "eager", "distinct")
    assert ran.returncode == 1 and DISTINCT in ran.stderr and SHARED not in ran.stderr
    ran = _fxlens(tmp_path, "run", "--backend", "aot_eager", SCRIPT, "eager", "shared")
    assert ran.returncode == 1 and SHARED in ran.stderr
    minified = _fxlens(tmp_path, "minify", SCRIPT)
    assert minified.returncode != 0
    assert "fails already in eager" in minified.stderr and SHARED in minified.stderr, minified.stderr


def test_a_call_with_mode_and_options_is_routed_without_error(tmp_path, monkeypatch):
    """torch passes a callable backend the call's `mode`/`options` as keywords: bisect's wrapper
    took none ("unexpected keyword argument 'mode'" in every run of such a script)."""
    import itertools

    import torch

    from fxlens import config
    from fxlens.bisect import backend as wrapper
    from fxlens.bisect.runs import read_outcome
    from fxlens.capture.runner import patch_compile
    from fxlens.trace.session import write_info

    monkeypatch.setattr(torch, "compile", torch.compile)
    monkeypatch.setattr(torch._dynamo, "optimize", torch._dynamo.optimize)
    monkeypatch.setattr(wrapper, "_ordinals", itertools.count())
    write_info(tmp_path, {"command": "run"})
    monkeypatch.setenv("FXLENS_SESSION", str(tmp_path))
    monkeypatch.setenv(config.ENV_BISECT_STAGE, "aot_eager")
    monkeypatch.setenv(config.ENV_BISECT_CHECK, "auto")
    torch._dynamo.reset()
    patch_compile(wrapper.wrapper, __file__, str(tmp_path))
    x = torch.randn(4)
    fn = torch.compile(lambda t: t.sin() + 1, mode="max-autotune-no-cudagraphs")
    assert torch.allclose(fn(x), x.sin() + 1)
    opts = torch.compile(lambda t: t.cos() * 2, options={"trace.enabled": False})
    assert torch.allclose(opts(x), x.cos() * 2)
    torch._dynamo.reset()
    out = read_outcome(1, "aot_eager", tmp_path, 0, 0.0)
    assert out.kind is None and len(out.graphs) == 2
