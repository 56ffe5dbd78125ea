"""nn.Transformer's causal-mask break has a caller-side switch: `tgt_is_causal=True` removes it, and
torch's own hint (capture_scalar_outputs) does not. Ground truth: TORCH_LOGS=graph_breaks of the
script run by hand three ways."""

import os
import subprocess
import sys

from capture_helpers import SCRIPTS

from fxlens.report.fixes import break_actions_of, describe


def _breaks(*args, env=None) -> int:
    proc = subprocess.run(
        [sys.executable, str(SCRIPTS / "causal_mask.py"), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "TORCH_LOGS": "graph_breaks", **(env or {})},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stderr.count("Graph break in user code")


def test_causal_mask_break_gets_the_callers_switch(run_report):
    proc, report = run_report("causal_mask")
    assert proc.returncode == 0, proc.stderr[-2000:]
    (b,) = report["graph_breaks"]
    assert b["library"]["function"] == "_detect_is_causal_mask"
    (act,) = break_actions_of(b)
    assert act["kind"] == "causal_mask" and "tgt_is_causal=True" in describe(act)
    assert f"fix: {describe(act)}" in proc.stdout
    # by hand: the switch removes the break; the switch torch's hint names does not
    assert _breaks() == 1
    assert _breaks("causal") == 0
    assert _breaks(env={"TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS": "1"}) == 1


def test_a_plain_item_break_keeps_its_row():
    b = {"reason": "Unsupported Tensor.item() call with capture_scalar_outputs=False", "library": None}
    assert [a["kind"] for a in break_actions_of(b)][0] == "config"
