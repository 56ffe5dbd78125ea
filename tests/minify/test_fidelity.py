"""The graph minify compiles in isolation is the graph the backend saw in the script.

Ground truth is the GraphModule Dynamo hands the backend, taken in-process by a recording backend;
it is saved as the capture saves it, rebuilt as minify rebuilds it, and the two are compared: ops
in order (mutations included), inputs' sizes, strides and dtypes, constants. The mask case is
pytorch/pytorch#196570: inductor fails only on the graph with the in-place index_put, and the
re-trace used to fold the mask and its mutation into one constant ("isolated: passes").
"""

import json

import pytest
import torch
import torch.fx as fx

from fxlens.minify import capture
from fxlens.minify.capture import baseline_config_lines
from fxlens.minify.confirm import load_candidate
from fxlens.minify.fidelity import differences, graph_ops
from fxlens.minify.graph import candidate_from_module


def mask_softmax(x):
    m = torch.full((8, 8), -10000.0)
    m[torch.arange(8).unsqueeze(0), torch.arange(8).unsqueeze(1)] = 0
    return torch.softmax(x + m, dim=-1)


class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(6, 3)
        self.register_buffer("scale", torch.tensor([2.0, 3.0, 4.0]))

    def forward(self, x):
        y = self.lin(x.t()) * self.scale
        y.add_(torch.ones(3))
        return y


CASES = {
    "mask_softmax": (mask_softmax, lambda: [torch.randn(8, 8)]),
    # a transposed (strided) input, a parameter and a buffer, an in-place add_
    "module": (Scaled(), lambda: [torch.randn(6, 4)]),
}


def _seen_by_backend(fn, inputs):
    """(the GraphModule Dynamo gave the backend, its example inputs): the ground truth."""
    seen = []

    def recording(gm, example_inputs):
        seen.append((gm, list(example_inputs)))
        return gm.forward

    torch._dynamo.reset()
    torch.compile(fn, backend=recording)(*inputs)
    torch._dynamo.reset()
    assert len(seen) == 1
    return seen[0]


def _saved_and_rebuilt(tmp_path, gm, example_inputs):
    """The capture's files for the graph, and the candidate minify rebuilds from them."""
    _, lifted, meta = capture._save_graph(tmp_path, 0, gm, example_inputs, "inductor")
    capture._save_values(tmp_path, 0, example_inputs, lifted)
    meta2, _, cand = load_candidate(tmp_path, 0)
    assert meta2 == json.loads(json.dumps(meta, default=str))
    return meta, cand


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_isolated_graph_is_the_one_the_backend_saw(tmp_path, name):
    fn, make = CASES[name]
    gm, example_inputs = _seen_by_backend(fn, make())
    meta, cand = _saved_and_rebuilt(tmp_path, gm, example_inputs)
    # ops in order, mutations included
    assert graph_ops(cand.graph) == graph_ops(gm.graph)
    # every tensor input the backend got, same size/stride/dtype, first and in order
    for x, spec in zip(example_inputs, cand.inputs):
        assert (tuple(spec.shape), tuple(spec.stride), spec.dtype) == (
            tuple(x.shape),
            tuple(x.stride()),
            str(x.dtype).removeprefix("torch."),
        )
    # the config the script ran with is carried: what a fresh worker lacks goes into the reproducer
    baseline = baseline_config_lines()
    carried = tuple(ln for ln in meta["config"] if ln not in baseline)
    assert differences(meta, cand, carried, baseline) == []
    assert differences(meta, cand, (), ()) != [] or not carried
    # and it computes what the backend's graph computes, on the same inputs
    ns: dict = {}
    exec(
        "import torch\nfrom math import inf, nan\nclass R(torch.nn.Module):\n"
        + _indent(cand.forward_source()),
        ns,
    )
    with torch.no_grad():
        want = gm(*[x.clone() if isinstance(x, torch.Tensor) else x for x in example_inputs])
        got = ns["R"]()(*[x.clone() if isinstance(x, torch.Tensor) else x for x in example_inputs])
    torch.testing.assert_close(list(got), list(want))


def _indent(src: str) -> str:
    return "".join("    " + ln + "\n" for ln in src.splitlines())


def test_the_mask_case_keeps_full_arange_and_the_setitem():
    gm, example_inputs = _seen_by_backend(*[(f, m()) for f, m in [CASES["mask_softmax"]]][0])
    ops = graph_ops(gm.graph)
    assert ops.count("setitem") == 1 and "full" in ops and "softmax" in ops


def test_a_folded_graph_is_named_as_differing(tmp_path):
    # what the old re-trace produced: fx.Tracer runs full/arange/setitem once, folding the mask
    gm, example_inputs = _seen_by_backend(mask_softmax, [torch.randn(8, 8)])
    meta, _ = _saved_and_rebuilt(tmp_path, gm, example_inputs)
    folded_src = (tmp_path / "graph_0.py").read_text()
    ns: dict = {"__name__": "old"}
    exec(folded_src, ns)
    root = ns["CapturedGraph"]()
    folded = fx.GraphModule(root, fx.Tracer().trace(root))
    cand = candidate_from_module(folded, list(example_inputs))
    baseline = baseline_config_lines()
    diff = differences(meta, cand, tuple(ln for ln in meta["config"] if ln not in baseline), baseline)
    assert len(diff) == 1 and diff[0].startswith("ops and mutations: the isolated graph is missing")
    assert "setitem x1" in diff[0] and "full x1" in diff[0]
