"""A backend whose compiler pass fails on a graph holding a tensor constant (issue 12, minify).

`torch.tensor([...])` built inside forward is a constant (`_tensor_constant0`, a get_attr node) in
the ATen graph; the pass raises KeyError deep inside itself, not in any op. Stands in for an
inductor scheduler KeyError while fusing, at a fraction of the cost (no C++ compile).
"""

import torch
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.aot_autograd import make_boxed_func


def fuse_pointwise(gm):
    """A compiler pass with a bug: it looks constants up in the wrong table."""
    buffers = {}
    for node in gm.graph.nodes:
        if node.op == "get_attr":
            buffers[node.target]  # KeyError: the pass never registered the graph's constants
    return gm


def fw_compiler(gm, example_inputs):
    return make_boxed_func(fuse_pointwise(gm).forward)


buggy = aot_autograd(fw_compiler=fw_compiler)


def f(x):
    w = torch.tensor([1.0, 2.0, 3.0, 4.0])
    return torch.relu(x * w + 1).sum(0)


print(torch.compile(f, backend=buggy)(torch.randn(8, 4)))
