"""Captured graphs holding tensor constants (issue 12): saved, reloaded and reduced with them.

Ground truth: scripts/const_pass.py fails with `KeyError: '_tensor_constant0'` raised inside its
backend's pass, only because the graph holds the constant `torch.tensor([1., 2., 3., 4.])`.
"""

import pytest
import torch

from fxlens.minify.graph import candidate_from_module, load_graph_module
from fxlens.minify.repro_writer import ReproSpec, render

from .conftest import SCRIPTS, run_fresh

CAPTURED = """
import torch


class CapturedGraph(torch.nn.Module):
    def forward(self, L_x_ : torch.Tensor):
        w = torch.tensor([[1.0, float("nan")], [3.0, 4.5]], dtype=torch.float64)
        i = torch.tensor([2, 7])
        return (L_x_ * w.float() + i.sum(),)
"""


def test_constants_become_literals_in_the_candidate():
    gm = load_graph_module(CAPTURED)
    cand = candidate_from_module(gm, [torch.randn(2, 2)])
    src = render(cand, ReproSpec(backend="eager", check="crash"))
    assert "_tensor_constant" not in src
    # the graph's own constant-building calls and the ops on them stay ops (issue 21.4: the re-trace
    # folded `w.float()` and `i.sum()` into values, and a mask written in place into a constant)
    assert "torch.tensor([[1.0, nan], [3.0, 4.5]], dtype = torch.float64)" in src
    assert "tensor.float()" in src and "tensor_1.sum()" in src
    # the literal rebuilds the same values: run the rendered Repro against the captured graph
    namespace: dict = {"__name__": "repro"}
    exec(src, namespace)
    x = torch.randn(2, 2)
    want = load_graph_module(CAPTURED)(x)[0]
    got = namespace["Repro"]()(*[x])[0]
    torch.testing.assert_close(got, want, equal_nan=True)


@pytest.mark.slow
def test_minify_keeps_the_constant_and_the_pass_signature(minify_env, tmp_path):
    from fxlens.minify.command import minify_script

    out = tmp_path / "repro.py"
    r = minify_script(str(SCRIPTS / "const_pass.py"), [], out=str(out), progress=False)
    assert r["signature"] == "KeyError: '_tensor_constantN'" and r["reproduced"] == "3/3"
    text = out.read_text()
    assert "torch.tensor([1.0, 2.0, 3.0, 4.0]" in text
    assert run_fresh(out) == (1, r["signature"])
