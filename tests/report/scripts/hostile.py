"""Trace strings with markup in them: a break message, a source line, a guard on a global."""

import torch

TAG = "<script>alert(1)</script> | `tick` ``` \x1b[31mred\x1b[0m *b* _i_ [l](javascript:x)"


def f(x):
    y = x.sin()  # ``` <b>in the graph code</b> | `x`
    torch._dynamo.graph_break(msg=TAG)  # <img src=x onerror=alert(2)> | ``` `x`
    return y.cos()


g = torch.compile(f, backend="eager")
g(torch.randn(4))
