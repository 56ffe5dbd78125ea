# fxlens corpus case: a fixed bug kept as a regression test (DESIGN.md style rule 11; issue 20.6).
# 23 graph-break sites in one compiled function. The text report listed the first 20 and said
# nothing of the other 3; it now ends the list with "... 3 more break site(s) (see --json)".
# tests/capture/test_sessions.py runs it under `fxlens run` and checks the count and the line.
# expect: exit 0
import torch


@torch.compile(backend="eager")
def many_breaks(x):
    x = x + 0
    torch._dynamo.graph_break()
    x = x + 1
    torch._dynamo.graph_break()
    x = x + 2
    torch._dynamo.graph_break()
    x = x + 3
    torch._dynamo.graph_break()
    x = x + 4
    torch._dynamo.graph_break()
    x = x + 5
    torch._dynamo.graph_break()
    x = x + 6
    torch._dynamo.graph_break()
    x = x + 7
    torch._dynamo.graph_break()
    x = x + 8
    torch._dynamo.graph_break()
    x = x + 9
    torch._dynamo.graph_break()
    x = x + 10
    torch._dynamo.graph_break()
    x = x + 11
    torch._dynamo.graph_break()
    x = x + 12
    torch._dynamo.graph_break()
    x = x + 13
    torch._dynamo.graph_break()
    x = x + 14
    torch._dynamo.graph_break()
    x = x + 15
    torch._dynamo.graph_break()
    x = x + 16
    torch._dynamo.graph_break()
    x = x + 17
    torch._dynamo.graph_break()
    x = x + 18
    torch._dynamo.graph_break()
    x = x + 19
    torch._dynamo.graph_break()
    x = x + 20
    torch._dynamo.graph_break()
    x = x + 21
    torch._dynamo.graph_break()
    x = x + 22
    torch._dynamo.graph_break()
    return x


if __name__ == "__main__":
    many_breaks(torch.randn(2))
