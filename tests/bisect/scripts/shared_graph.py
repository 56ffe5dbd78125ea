"""Two compiled closures of one code object that wrongly share one cached graph (issue 34).

Dynamo reuses a cache entry only for a backend that compares equal to the one that compiled it;
under `set_stance(skip_guard_eval_unsafe=True)` it runs no guard when a code object has one entry,
so `scale(3)` runs the graph compiled for `scale(2)` (its constant 2 baked in): a missing guard,
made on purpose. With one backend for both calls (the default, or `shared`), the script fails with
"f2 ran f1's graph"; with two distinct backend objects (`distinct`), Dynamo must compile again and
the stance refuses: "Recompilation triggered". Usage: shared_graph.py [BACKEND] [shared|distinct].
"""

import sys

import torch

name = sys.argv[1] if len(sys.argv) > 1 else "aot_eager"
mode = sys.argv[2] if len(sys.argv) > 2 else "shared"


def scale(k):
    def f(x):
        return x * k

    return f


def named(gm, example_inputs):  # a backend object of the script's own, for `distinct`
    from torch._dynamo.backends.registry import lookup_backend

    return lookup_backend(name)(gm, example_inputs)


first_backend = name
second_backend = named if mode == "distinct" else name
f1 = torch.compile(scale(2), backend=first_backend)
f2 = torch.compile(scale(3), backend=second_backend)
x = torch.ones(3)
f1(x)
with torch.compiler.set_stance("default", skip_guard_eval_unsafe=True):
    y = f2(x)
assert torch.equal(y, x * 3), "f2 ran f1's graph"
print("ok")
