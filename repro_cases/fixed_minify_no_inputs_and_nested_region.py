# fxlens corpus case: a fixed bug kept as a regression test.
# pytorch/pytorch#193265's shape: `torch.tensor(5.0).cumsum(0)` built inside a compiled function,
# once with no arguments (a graph with no inputs) and once inside a
# `torch.compiler.nested_compile_region`. minify wrote candidates that were not valid Python for
# the first (`return [\n,\n]`), and could not re-trace the second ("'CapturedGraph' object has no
# attribute 'subgraph_0'": the region's body was not saved). This captures both graphs with an
# eager backend, saves and re-traces them as minify does, and renders a reproducer of each.
# expect: exit 0
import ast
import sys

import torch

from fxlens.minify.capture import graph_source
from fxlens.minify.graph import candidate_from_module, load_graph_module
from fxlens.minify.regions import inline_regions
from fxlens.minify.repro_writer import ReproSpec, render


@torch.compiler.nested_compile_region
def region(x):
    return x * torch.tensor(5.0).cumsum(0)


def no_inputs():
    return torch.tensor(5.0).cumsum(0)


def nested(x):
    return region(region(x) + 1)


GRAPHS = []


def keep(gm, example_inputs):
    GRAPHS.append((gm, list(example_inputs)))
    return gm


if __name__ == "__main__":
    torch.compile(no_inputs, backend=keep)()
    x = torch.randn(4)
    want = nested(x)
    torch.compile(nested, backend=keep, fullgraph=True)(x)
    problems = []
    for (gm, inputs), name in zip(GRAPHS, ("no inputs", "nested region"), strict=True):
        inline_regions(gm)
        traced = load_graph_module(graph_source(gm))
        cand = candidate_from_module(traced, inputs)
        text = render(cand, ReproSpec(backend="eager", check="crash"))
        try:
            ast.parse(text)
        except SyntaxError as e:
            problems.append(f"{name}: reproducer is not valid Python: {e}")
        if name == "nested region" and not torch.equal(traced(*inputs)[0], want):
            problems.append("nested region: the inlined graph computes another value")
    if problems:
        print("fxlens-signature: " + "; ".join(problems), file=sys.stderr)
        sys.exit(1)
    print("ok")
