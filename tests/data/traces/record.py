"""The fixed workload behind tests/data/traces/<torch version>/: run it under each torch release with
TORCH_TRACE set (see README.md beside it) and commit the log, so the report's parsers are tested
against every version's wording without installing that version.

Four cases, each a known shape of trouble: a graph break (print), a recompile on a new shape
(dynamic=False), a recompile on grad mode (the global-state guard), and a training step compiled
with aot_eager (forward and backward graphs through AOTAutograd). Changing this file means
re-recording every version (the counts in test_trace_fixtures.py are per script, not per version).
"""

import torch


def breaks(x):
    y = x.sin()
    print("graph break here")  # Dynamo cannot trace print: the graph ends here and resumes after
    return y.cos()


def shapes(x):
    return x * 2 + 1


def grad_mode(x):
    return x.exp() - 1


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 4)

    def forward(self, x):
        return torch.nn.functional.gelu(self.lin(x)).sum()


def main():
    torch.manual_seed(0)
    torch.compile(breaks, backend="eager")(torch.randn(4))

    f = torch.compile(shapes, backend="eager", dynamic=False)
    f(torch.randn(4))
    f(torch.randn(6))  # a new size: recompile

    g = torch.compile(grad_mode, backend="eager")
    g(torch.randn(3))
    with torch.no_grad():
        g(torch.randn(3))  # grad mode changed: recompile

    net = Net()
    torch.compile(net, backend="aot_eager")(torch.randn(2, 8)).backward()


if __name__ == "__main__":
    main()
