"""Three graphs (two graph breaks); torch.relu sits only in the third, inside `block`'s resume.

usage: multi.py [BACKEND] [--train] [--op relu|erf|none] [--fail-eager] [--recompile-error]
                [--inductor-relu-bug compile_error|accuracy] [--flaky MARKER]

--flaky MARKER: relu only on the first run (the one that creates MARKER): a flaky failure.
"""

import random
import sys

import numpy
import torch

# what each run starts with: forked runs must draw like new interpreters (tests/bisect)
print("draws", random.random(), numpy.random.random(), float(torch.rand(1)))

argv = sys.argv[1:]
BACKEND = argv[0] if argv and not argv[0].startswith("--") else "inductor"
TRAIN = "--train" in argv
OP = argv[argv.index("--op") + 1] if "--op" in argv else "relu"
if "--flaky" in argv:
    marker = argv[argv.index("--flaky") + 1]
    try:
        open(marker, "x").close()
    except FileExistsError:
        OP = "none"
torch.manual_seed(0)
if "--inductor-relu-bug" in argv:  # inductor's own fault injection, in its C++ codegen for relu
    torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = argv[argv.index("--inductor-relu-bug") + 1]


@torch.compile(backend=BACKEND)
def embed(x):
    return torch.sin(x) * 2 + 1


@torch.compile(backend=BACKEND)
def block(x, w):
    y = x @ w
    torch._dynamo.graph_break()
    if OP == "relu":
        y = torch.relu(y - 0.5)  # the culprit graph: block's resume function
    elif OP == "erf":
        y = torch.erf(y)
    return y * 3


if "--fail-eager" in argv:
    raise SystemExit("the model itself is broken: no compiler involved")
if "--recompile-error" in argv:
    # Dynamo itself refuses (any backend, even eager); without torch.compile this runs fine
    torch._dynamo.config.error_on_recompile = True
    embed(torch.randn(3))

x = torch.randn(4, 8)
w = torch.randn(8, 8, requires_grad=TRAIN)
for _ in range(2):
    out = block(embed(x), w)
    if TRAIN:
        out.sum().backward()
print("sum", float(out.sum()))
