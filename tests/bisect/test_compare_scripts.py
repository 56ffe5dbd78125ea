"""Scripts that compare a backend with a reference themselves (issue 12.2), for `fxlens bisect`.

Ground truth: tests/bisect/scripts/compare.py exits 1 on its own (checked here), its reference call
uses `eager`, and its backend under test is wrong only on the graph holding sigmoid (graph #1, the
code after the break). Only the non-reference calls may be stepped; the verdict must name that
backend, that graph, and keep `eager` as the reference.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from bisect_helpers import SCRIPTS

torch = pytest.importorskip("torch")

from fxlens import config  # noqa: E402
from fxlens.capture.runner import patch_compile  # noqa: E402

COMPARE = SCRIPTS / "compare.py"


def _compile_calls(monkeypatch, tmp_path, override, keep: str, calls) -> list[dict]:
    """Run `calls()` with torch.compile and torch._dynamo.optimize patched as the runner patches
    them (both restored after the test); the `compile_call` events they recorded."""
    monkeypatch.setenv(config.ENV_OVERRIDE_KEEP, keep)
    monkeypatch.setattr(torch, "compile", torch.compile)
    monkeypatch.setattr(torch._dynamo, "optimize", torch._dynamo.optimize)
    patch_compile(override, str(COMPARE), str(tmp_path))
    torch._dynamo.reset()
    try:
        calls()
    finally:
        torch._dynamo.reset()
    return [json.loads(ln) for ln in (tmp_path / "events.jsonl").read_text().splitlines()]


def test_reference_calls_keep_their_backend_others_get_the_override(tmp_path, monkeypatch):
    seen = []

    def override(gm, example_inputs):  # the plain override: never used when for_asked exists
        seen.append("plain")
        return gm.forward

    def for_asked(asked, backend=None):  # the description, and the script's own object
        def backend(gm, example_inputs):
            seen.append(asked)
            return gm.forward

        return backend

    override.for_asked = for_asked

    def run():
        for backend in ("eager", "inductor", "aot_eager"):
            torch.compile(lambda t: t * 2 + 1, backend=backend)(torch.randn(4))

    calls = _compile_calls(monkeypatch, tmp_path, override, "eager,aot_eager", run)
    assert seen == ["inductor"]
    assert [(c["backend"], c["override"]) for c in calls] == [
        ("eager", False),
        ("inductor", True),
        ("aot_eager", False),
    ]


def test_old_optimize_api_is_routed_like_torch_compile(tmp_path, monkeypatch):
    # bug reports written for torch 1.x/2.0 call torch._dynamo.optimize(backend)(fn) directly;
    # torch.compile calls it too, and that inner call must not be recorded a second time
    seen = []

    def override(gm, example_inputs):
        seen.append("override")
        return gm.forward

    def run():
        x = torch.randn(4)
        torch._dynamo.optimize("inductor")(lambda t: t * 2 + 1)(x)
        torch._dynamo.optimize(backend="eager", nopython=True)(lambda t: t * 3 + 1)(x)
        torch.compile(lambda t: t * 4 + 1, backend="aot_eager")(x)

    calls = _compile_calls(monkeypatch, tmp_path, override, "eager", run)
    assert seen == ["override", "override"]  # eager is kept: the reference call
    assert [(c["backend"], c["override"], c["api"], c["line"] > 0) for c in calls] == [
        ("inductor", True, "torch._dynamo.optimize", True),
        ("eager", False, "torch._dynamo.optimize", True),
        ("aot_eager", True, "torch.compile", True),
    ]
    assert {Path(c["file"]).name for c in calls} == {Path(__file__).name}


def test_compare_script_fails_on_its_own():
    proc = subprocess.run([sys.executable, str(COMPARE)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "Tensor-likes are not close" in proc.stderr


@pytest.mark.slow
def test_bisect_steps_only_the_backend_under_test(bisect):
    proc, v = bisect(COMPARE)
    assert proc.returncode == 0, proc.stderr
    spec = f"{COMPARE}:scaled_backend"
    assert v["backend"] == spec and v["references"] == ["eager"]
    assert v["first_failing_stage"] == spec
    assert {s["stage"]: s["ok"] for s in v["stages"]} == {"eager": True, "aot_eager": True, spec: False}
    # the accuracy check names the cause; the script's own exit is its consequence
    assert v["failure"]["kind"] == "accuracy"
    assert v["graph"]["ordinal"] == 1 and v["culprit"]["function"] == "f"
    assert "several backends" not in proc.stdout + proc.stderr
