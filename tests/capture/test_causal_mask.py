"""nn.Transformer's causal-mask break has a caller-side switch: `tgt_is_causal=True` removes it, and
torch's own hint (capture_scalar_outputs) does not. Ground truth: TORCH_LOGS=graph_breaks of the
script run by hand three ways (children forked from one interpreter that imported torch)."""

from capture_helpers import SCRIPTS
from forked import forked_runs

from fxlens.report.fixes import break_actions_of, describe

# (argv[1], prelude): as given, with the switch, with torch's hint set (its config, as the
# TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS=1 environment sets it at import)
BY_HAND = [("", ""), ("causal", ""), ("", "torch._dynamo.config.capture_scalar_outputs = True")]


def test_causal_mask_break_gets_the_callers_switch(run_report, tmp_path):
    proc, report = run_report("causal_mask")
    assert proc.returncode == 0, proc.stderr[-2000:]
    (b,) = report["graph_breaks"]
    assert b["library"]["function"] == "_detect_is_causal_mask"
    (act,) = break_actions_of(b)
    assert act["kind"] == "causal_mask" and "tgt_is_causal=True" in describe(act)
    assert f"fix: {describe(act)}" in proc.stdout
    # by hand: the switch removes the break; the switch torch's hint names does not
    got = forked_runs(SCRIPTS / "causal_mask.py", BY_HAND, tmp_path, {"TORCH_LOGS": "graph_breaks"})
    assert [code for code, _ in got] == [0, 0, 0], got
    assert [err.count("Graph break in user code") for _, err in got] == [1, 0, 1]


def test_a_plain_item_break_keeps_its_row():
    b = {"reason": "Unsupported Tensor.item() call with capture_scalar_outputs=False", "library": None}
    assert [a["kind"] for a in break_actions_of(b)][0] == "config"
