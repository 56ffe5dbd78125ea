"""A bug report's shape (issue 12.2): the script compares a backend with `eager` itself.

`python compare.py [custom|inductor]`: `custom` is `scaled_backend` below, which is wrong only on
graphs holding aten `sigmoid` (a user's backend with a bad rule); `inductor` uses torch's own
relu accuracy bug switch. The script exits 1 through torch.testing.assert_close, as the reports do.
"""

import sys

import torch


def scaled_backend(gm, example_inputs):
    """A user's backend: right everywhere except where the graph calls sigmoid."""
    if not any(n.target is torch.sigmoid for n in gm.graph.nodes):
        return gm.forward

    def run(*args):
        out = gm(*args)
        return tuple(o * 1.5 for o in out) if isinstance(out, tuple) else out * 1.5

    return run


def first(x):
    return torch.relu(x) + 1


def second(x):
    return torch.sigmoid(x) * 2


def f(x):
    y = first(x)
    print("graph break")
    return second(y)


which = sys.argv[1] if len(sys.argv) > 1 else "custom"
if which == "inductor":
    import torch._inductor.config

    torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "accuracy"
    backend = "inductor"
else:
    backend = scaled_backend
torch.manual_seed(0)
x = torch.randn(16)
ref = torch.compile(f, backend="eager")(x)
act = torch.compile(f, backend=backend)(x)
torch.testing.assert_close(ref, act)
print("ok")
