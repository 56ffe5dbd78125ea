# fxlens corpus case: a fixed bug kept as a regression test (DESIGN.md style rule 11; issue 21.4).
# pytorch/pytorch#196570: an attention mask built with torch.full, written in place (index_put),
# then softmax; inductor fails on that graph (KeyError: 'buf1'). `fxlens minify` re-traced the
# captured graph with plain fx tracing, which ran full/arange/setitem once and baked the mask into
# a constant: the graph compiled alone had no mutation and passed ("isolated: passes"). This
# rebuilds the captured code as minify does and checks the ops, the mutation included, survive.
# expect: exit 0
import sys

import torch

from fxlens.minify.fidelity import graph_ops
from fxlens.minify.graph import candidate_from_module, load_graph_module

CAPTURED = """
import torch


class CapturedGraph(torch.nn.Module):
    def forward(self, L_x_ : torch.Tensor):
        l_x_ = L_x_
        m = torch.full((8, 8), -10000.0)
        arange = torch.arange(8)
        unsqueeze = arange.unsqueeze(0);  arange = None
        arange_1 = torch.arange(8)
        unsqueeze_1 = arange_1.unsqueeze(1);  arange_1 = None
        m[(unsqueeze, unsqueeze_1)] = 0;  setitem = m;  unsqueeze = unsqueeze_1 = setitem = None
        add = l_x_ + m;  l_x_ = m = None
        softmax = torch.softmax(add, dim = -1);  add = None
        return (softmax,)
"""

if __name__ == "__main__":
    cand = candidate_from_module(load_graph_module(CAPTURED), [torch.randn(8, 8)])
    ops = graph_ops(cand.graph)
    print(ops)
    want = ["full", "arange", "unsqueeze", "arange", "unsqueeze", "setitem", "add", "softmax"]
    sys.exit(0 if ops == want else 1)
