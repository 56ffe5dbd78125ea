# ruff: noqa  -- a recording script kept as it ran; its output is the data beside it
"""Records every kind of failed guard torch emits (TORCH_LOGS=recompiles python record_guards.py);
its output, cut to the "=== case" markers and guard lines, is tests/data/guards/<torch version>.log."""

import torch
import torch.nn as nn

torch._dynamo.config.recompile_limit = 64


def case(name, f, calls):
    torch._dynamo.reset()
    print(f"=== {name}", flush=True)
    c = torch.compile(f, backend="eager")
    for a, kw, ctx in calls:
        with ctx():
            c(*a, **kw)


import contextlib

N = contextlib.nullcontext


def f(x):
    return x * 2


case("size", f, [((torch.randn(4),), {}, N), ((torch.randn(5),), {}, N), ((torch.randn(1),), {}, N)])
case("ndim", f, [((torch.randn(4),), {}, N), ((torch.randn(4, 2),), {}, N)])
case("stride", f, [((torch.randn(4, 3),), {}, N), ((torch.randn(3, 4).t(),), {}, N)])
case("dtype", f, [((torch.randn(4),), {}, N), ((torch.randn(4).double(),), {}, N)])
case("requires_grad", f, [((torch.randn(4),), {}, N), ((torch.randn(4, requires_grad=True),), {}, N)])
case("grad_mode", f, [((torch.randn(4),), {}, N), ((torch.randn(4),), {}, torch.no_grad)])
case("autocast", f, [((torch.randn(4),), {}, N), ((torch.randn(4),), {}, lambda: torch.autocast("cpu"))])


def g(x, k):
    return x * k


case("int_arg", g, [((torch.randn(4), 2), {}, N), ((torch.randn(4), 3), {}, N)])
case("float_arg", g, [((torch.randn(4), 2.5), {}, N), ((torch.randn(4), 3.5), {}, N)])
case("bool_arg", g, [((torch.randn(4), True), {}, N), ((torch.randn(4), False), {}, N)])


def kw(x, *, scale=None):
    return x if scale is None else x * scale


case("none_vs_tensor_kw", kw, [((torch.randn(4),), {}, N), ((torch.randn(4),), {"scale": torch.randn(4)}, N)])


def lst(xs):
    return sum(xs)


case("list_len", lst, [(([torch.randn(2)] * 2,), {}, N), (([torch.randn(2)] * 3,), {}, N)])
FLAG = True


def gl(x):
    return x + 1 if FLAG else x - 1


def run_gl():
    global FLAG
    torch._dynamo.reset()
    print("=== global", flush=True)
    c = torch.compile(gl, backend="eager")
    c(torch.randn(2))
    FLAG = False
    c(torch.randn(2))


run_gl()


def item(x):
    v = x.sum().item()
    return x * v


case("item", item, [((torch.ones(4),), {}, N), ((torch.ones(4) * 2,), {}, N)])


class M(nn.Module):
    def __init__(s):
        super().__init__()
        s.lin = nn.Linear(4, 4)
        s.drop = nn.Dropout(0.1)
        s.k = 3

    def forward(s, x):
        return s.drop(s.lin(x)) * s.k


m = M()


def run_mod():
    torch._dynamo.reset()
    print("=== training", flush=True)
    c = torch.compile(m, backend="eager")
    c(torch.randn(2, 4))
    m.eval()
    c(torch.randn(2, 4))
    m.train()
    torch._dynamo.reset()
    print("=== module_int_attr", flush=True)
    c = torch.compile(m, backend="eager")
    c(torch.randn(2, 4))
    m.k = 4
    c(torch.randn(2, 4))
    torch._dynamo.reset()
    print("=== module_forward_kwargs", flush=True)
    c = torch.compile(m, backend="eager")
    c(x=torch.randn(2, 4))
    c(x=torch.randn(3, 4))


run_mod()


def ident(fn, x):
    return fn(x)


case("function_id", ident, [((torch.relu, torch.randn(2)), {}, N), ((torch.sigmoid, torch.randn(2)), {}, N)])


def dd(x):
    return x * 2


def run_dd():
    torch._dynamo.reset()
    print("=== default_dtype", flush=True)
    c = torch.compile(dd, backend="eager")
    c(torch.randn(2))
    torch.set_default_dtype(torch.float64)
    c(torch.randn(2).float())
    torch.set_default_dtype(torch.float32)
    torch._dynamo.reset()
    print("=== deterministic", flush=True)
    c = torch.compile(dd, backend="eager")
    c(torch.randn(2))
    torch.use_deterministic_algorithms(True)
    c(torch.randn(2))
    torch.use_deterministic_algorithms(False)
    torch._dynamo.reset()
    print("=== dynamic_range", flush=True)
    c = torch.compile(dd, backend="eager")
    c(torch.randn(3))
    c(torch.randn(4))
    c(torch.randn(1))
    torch._dynamo.reset()
    print("=== mark_dynamic_then_0d", flush=True)

    def ds(x):
        return x[: x.shape[0] // 2] * 2 if x.shape[0] > 5 else x

    c = torch.compile(ds, backend="eager", dynamic=True)
    c(torch.randn(8))
    c(torch.randn(3))
    torch._dynamo.reset()
    print("=== dict_key", flush=True)

    def dk(d):
        return sum(v for v in d.values())

    c = torch.compile(dk, backend="eager")
    c({"a": torch.randn(2)})
    c({"a": torch.randn(2), "b": torch.randn(2)})
    torch._dynamo.reset()
    print("=== str_arg", flush=True)

    def sa(x, mode):
        return x * 2 if mode == "a" else x

    c = torch.compile(sa, backend="eager")
    c(torch.randn(2), "a")
    c(torch.randn(2), "b")
    torch._dynamo.reset()
    print("=== threads", flush=True)
    c = torch.compile(dd, backend="eager")
    c(torch.randn(2))
    torch.set_num_threads(1)
    c(torch.randn(2))


run_dd()
