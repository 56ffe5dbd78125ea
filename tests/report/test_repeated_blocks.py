"""Repeated blocks (fxlens.report.blocks): a graph that inlines N instances of one module class, named
with its root and attribute path, from a real torch.compile trace. Ground truth: the script's own
model (tests/report/scripts/repeated_blocks.py prints how many blocks of which class it built;
the slow test builds a transformers LlamaForCausalLM with a known number of decoder layers)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fxlens.report.blocks import block_findings
from fxlens.report.build import build_report
from fxlens.report.text import render_text
from fxlens.trace.session import Session

SCRIPTS = Path(__file__).parent / "scripts"


def _trace(script: Path, root: Path) -> tuple[Path, str]:
    env = {**os.environ, "TORCH_TRACE": str(root / "trace")}
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=root, env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return root / "trace", proc.stdout


def test_repeated_block_named_with_root_and_attribute(blocks_trace):
    trace, stdout = blocks_trace
    _, n, cls = next(ln for ln in stdout.splitlines() if ln.startswith("blocks ")).split()
    report = build_report(Session.open(trace), with_guards=False)
    (b,) = report["repeated_blocks"]
    assert (b["block_class"], b["count"]) == (cls, int(n)) == ("Block", 4)
    assert (b["root"], b["attribute"], b["compile_id"]) == ("Net.forward", "blocks", "0/0")
    assert b["block_class_path"].endswith(".Block")
    # the blocks are most of the graph (the head's one Linear is not a block's)
    assert 0.5 < b["block_share"] < 1 and b["block_ops"] < b["graph_ops"]
    # the same as a doctor finding, with the fields `fxlens fix` reads to try regional compilation
    (f,) = block_findings(report)
    assert f["kind"] == "repeated_block" and (f["block_class"], f["count"], f["root"]) == (
        "Block",
        4,
        "Net.forward",
    )
    assert f["attribute"] == "blocks" and f["fix"] == b["fix"]
    # `fxlens fix` picks the block up as a regional-compilation fix to try (not a code patch)
    from fxlens.fix.findings import _from_report

    (entry,) = [e for e in _from_report(report) if e["action"]["kind"] == "regional"]
    assert entry["action"]["params"]["block"] == "Block" and "Block x 4" in entry["finding"]
    text = render_text(report)
    assert "Repeated block: Block x 4 inlined into one graph of `Net.forward`" in text
    assert "for block in model.blocks: block.compile()" in text


LLAMA = textwrap.dedent(
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=12,
                      num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=64)
    model = LlamaForCausalLM(cfg).eval()
    print("layers", len(model.model.layers), type(model.model.layers[0]).__name__)
    with torch.no_grad():
        torch.compile(model)(torch.randint(0, 128, (1, 16)))
    """
)


@pytest.mark.slow  # a 12-layer Llama under inductor: ~40 s on 2 busy cores
def test_tiny_llama_decoder_layers_named(tmp_path):
    script = tmp_path / "llama.py"
    script.write_text(LLAMA)
    trace, stdout = _trace(script, tmp_path)
    _, n, cls = next(ln for ln in stdout.splitlines() if ln.startswith("layers ")).split()
    report = build_report(Session.open(trace), with_guards=False)
    (b,) = report["repeated_blocks"]
    assert (b["block_class"], b["count"], b["root"]) == (cls, int(n), "LlamaForCausalLM.forward")
    assert b["attribute"] == "model.layers" and b["compile_s"] > 0 and b["block_s"] <= b["compile_s"]
    assert b["message"].startswith(
        "LlamaDecoderLayer x 12 inlined into one graph of `LlamaForCausalLM.forward`"
    )


VIT = textwrap.dedent(
    """
    import torch
    from transformers import ViTConfig, ViTForImageClassification
    cfg = ViTConfig(hidden_size=32, num_hidden_layers=12, num_attention_heads=4, intermediate_size=64,
                    image_size=16, patch_size=8, num_labels=10)
    model = ViTForImageClassification(cfg).eval()
    print("layers", len(model.vit.layers), type(model.vit.layers[0]).__name__)
    with torch.no_grad():
        torch.compile(model)(torch.randn(1, 3, 16, 16))
    """
)


@pytest.mark.slow  # a 12-layer ViT under inductor: ~40 s on 2 busy cores
def test_tiny_vit_layers_named(tmp_path):
    script = tmp_path / "vit.py"
    script.write_text(VIT)
    trace, stdout = _trace(script, tmp_path)
    _, n, cls = next(ln for ln in stdout.splitlines() if ln.startswith("layers ")).split()
    report = build_report(Session.open(trace), with_guards=False)
    (b,) = report["repeated_blocks"]
    assert (b["block_class"], b["count"]) == (cls, int(n)) == ("ViTLayer", 12)
    assert (b["root"], b["attribute"]) == ("ViTForImageClassification.forward", "vit.layers")
