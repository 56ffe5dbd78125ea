# fxlens corpus case: a fixed bug kept as a regression test (DESIGN.md style rule 11; issue 12).
# `fxlens minify` stopped with "graph 0 ... cannot be re-traced for reduction: KeyError:
# _tensor_constant0" on a graph building a tensor inside forward: the re-trace turned it into a
# get_attr constant that candidates (source only) dropped. Constants now travel as literals.
# expect: exit 0
import sys

import torch

from fxlens.minify.graph import candidate_from_module, load_graph_module
from fxlens.minify.repro_writer import ReproSpec, render

CAPTURED = """
import torch


class CapturedGraph(torch.nn.Module):
    def forward(self, L_x_ : torch.Tensor):
        w = torch.tensor([1.0, 2.0, 3.0, 4.0])
        return (torch.relu(L_x_ * w + 1).sum(0),)
"""

if __name__ == "__main__":
    x = torch.randn(8, 4)
    cand = candidate_from_module(load_graph_module(CAPTURED), [x])
    namespace = {"__name__": "repro"}
    exec(render(cand, ReproSpec(backend="eager", check="crash")), namespace)
    got = namespace["Repro"]()(x)[0]
    if not torch.equal(got, torch.relu(x * torch.tensor([1.0, 2.0, 3.0, 4.0]) + 1).sum(0)):
        print("fxlens-signature: AccuracyError: constant lost", file=sys.stderr)
        sys.exit(1)
    print("ok")
