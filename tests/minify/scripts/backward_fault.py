"""Training step whose backend (defined here, AOTAutograd-based) fails only when compiling the
backward graph, on ReLU's gradient (aten.threshold_backward): the forward compiles and runs fine."""

import sys

import torch
from torch._dynamo.backends.common import aot_autograd

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from mlp import Model  # noqa: E402


def fw_compiler(gm, example_inputs):
    return gm


def bw_compiler(gm, example_inputs):
    if any("threshold_backward" in str(n.target) for n in gm.graph.nodes):
        raise NotImplementedError("no lowering for aten.threshold_backward")
    return gm


backward_fault_backend = aot_autograd(fw_compiler=fw_compiler, bw_compiler=bw_compiler)

if __name__ == "__main__":
    torch.manual_seed(0)
    model = Model(4, 2)
    loss = torch.compile(model, backend=backward_fault_backend)(torch.randn(8, 16)).sum()
    loss.backward()
    print("ok", loss.item())
