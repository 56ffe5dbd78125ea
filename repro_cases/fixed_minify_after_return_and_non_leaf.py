# fxlens corpus case: a fixed bug kept as a regression test.
# Two failures a graph causes outside itself, which minify refused as "fails outside the compiled
# graphs": pytorch/pytorch#90507 (aot_eager returns a view that the caller's `y.mul_(2)` may not
# mutate) and pytorch/pytorch#185497's shape (a graph that mutates its non-leaf input in place;
# the reproducer's inputs were leaves, on which eager itself refuses the in-place op). This
# captures both graphs, renders candidates as minify does (MUTATE; leaf=False), and evaluates them
# as minify's workers do: the first must fail on aot_eager and pass on eager, the second must run.
# expect: exit 0
import sys

import torch

from fxlens.minify.graph import candidate_from_module
from fxlens.minify.worker_loop import _evaluate
from fxlens.minify.repro_writer import ReproSpec, render


def returns_view(x):
    out = x * 2
    out.unsqueeze_(0)
    return out


def mutates_input(x, mean):
    y = x[:, :2] * 1
    x.sub_(mean)
    return y


GRAPHS = []


def keep(gm, example_inputs):
    GRAPHS.append((gm, list(example_inputs)))
    return gm


def signature(gm, inputs, backend, **spec):
    text = render(candidate_from_module(gm, inputs), ReproSpec(backend=backend, check="crash", **spec))
    ns = {"__name__": "candidate"}
    exec(compile(text, "<candidate>", "exec"), ns)
    return _evaluate(ns, backend, backend, None)


if __name__ == "__main__":
    torch.compile(returns_view, backend=keep)(torch.ones(2, requires_grad=True))
    base = torch.randn(3, 4, requires_grad=True)
    torch.compile(mutates_input, backend=keep)(base * 1.0, torch.randn(3, 1, requires_grad=True))
    (view_gm, view_in), (mut_gm, mut_in) = GRAPHS
    problems = []
    got = signature(view_gm, view_in, "aot_eager", mutate=True)
    if not (got or "").startswith("RuntimeError: Output N of CompiledFunction is a view"):
        problems.append(f"returned view mutated by the caller: {got}")
    if (got := signature(view_gm, view_in, "eager", mutate=True)) is not None:
        problems.append(f"eager backend: {got}")
    if (got := signature(mut_gm, mut_in, "eager", backward=True)) is not None:
        problems.append(f"non-leaf input mutated in place: {got}")
    if problems:
        print("fxlens-signature: " + "; ".join(problems), file=sys.stderr)
        sys.exit(1)
    print("ok")
