"""dynamic=True: one compile with symbolic sizes serves every shape (sizes passed to kernels)."""

from __future__ import annotations

import copy
import re

import pytest
import sympy
import torch
import torch.nn.functional as F
from models import MLP

from fxlens.backend import compile_fx, runtime
from fxlens.backend.kernel_ctx import index_equal
from fxlens.backend.symbolic import bind


@pytest.fixture
def loads(monkeypatch):
    """Every kernel source handed to the Triton loader (a cache hit would not reach it twice)."""
    seen: list = []
    real = runtime.load_kernel

    def load(source, name, interpret):
        seen.append(source)
        return real(source, name, interpret)

    monkeypatch.setattr(runtime, "load_kernel", load)
    return seen


@pytest.fixture
def artifacts(monkeypatch):
    got: dict = {}
    monkeypatch.setattr(
        compile_fx, "log_artifact", lambda n, p: got.setdefault(n, []).append(p() if callable(p) else p)
    )
    monkeypatch.setattr(
        compile_fx, "log_json", lambda n, p: got.setdefault(n, []).append(p() if callable(p) else p)
    )
    return got


def _fresh():
    torch._dynamo.reset()
    compile_fx.COMPILED.clear()
    compile_fx.DYNAMIC_FALLBACKS.clear()


def _marked(t, *dims):
    for d in dims:
        torch._dynamo.mark_dynamic(t, d)
    return t


def _sym(call, arg: str, dim: int) -> str:
    """The size symbol of input `arg`'s dim `dim`, as the wrapper checks the input's layout."""
    m = re.search(rf"{arg} = _fix\({arg}, \(([^)]*)\)", call.wrapper_source)
    name = m.group(1).split(", ")[dim]
    assert name in call.size_symbols
    return name


def _check_once(fn, make, ns, dynamic=True, atol=1e-5, rtol=1e-4):
    """Run `fn` compiled on inputs `make(n)` for each n: outputs match eager; one compile in all.
    dynamic=None: only the dims `make` marks dynamic (mark_dynamic) are symbolic."""
    _fresh()
    cfn = torch.compile(fn, backend="fxlens", dynamic=dynamic)
    for n in ns:
        args = make(n)
        torch.testing.assert_close(cfn(*args), fn(*args), atol=atol, rtol=rtol)
    assert list(compile_fx.DYNAMIC_FALLBACKS) == []
    (call,) = compile_fx.COMPILED  # the inference graph, compiled once for all shapes
    assert call.dynamic and call.size_symbols
    return call


def _size_args(call) -> set:
    return {a for k in call.kernels for a in k.get("symbolic", {}).get("size_args", [])}


def test_pointwise_chain_broadcast(guards, loads):
    def f(x, y, b):
        return ((x * 2 + y).relu() - b).sigmoid() * x.shape[0]

    call = _check_once(f, lambda n: (torch.randn(n, 6), torch.randn(n, 1), torch.randn(6)), (3, 5, 11))
    assert len(call.kernels) == 1 and len(loads) == 1  # one kernel, loaded once for the 3 shapes
    (k,) = call.kernels
    rows, cols = _sym(call, "arg2", 0), _sym(call, "arg2", 1)  # dynamic=True: 6 is symbolic too
    assert sorted(k["symbolic"]["size_args"]) == sorted([rows, cols])  # both are kernel arguments
    assert f"p_buf0, {', '.join(k['symbolic']['size_args'])}, xnumel, rnumel, XBLOCK" in k["source"]
    assert f" * {rows}\n" in k["source"]  # x.shape[0] as a scalar operand
    assert "xnumel=(" in call.wrapper_source and f"{rows} = " in call.wrapper_source
    assert guards.check() >= 3  # every call allocated its output, none written out of bounds


@pytest.mark.parametrize("dim", [-1, 0])
def test_sum_over_dynamic_and_static_dim(guards, loads, dim):
    call = _check_once(lambda x: (x.exp() * 2).sum(dim), lambda n: (_marked(torch.randn(n, 7), 0),), (3, 6, 10), dynamic=None)  # fmt: skip
    (k,) = call.kernels
    # dim 0 is the dynamic one: a symbolic row length is reduced in a loop, never in one block;
    # rows of the static 7 are reduced whole (persistent), the number of rows is symbolic
    assert ("for roff in range" in k["source"]) == (dim == 0)
    n = _sym(call, "arg1", 0)
    assert (k["symbolic"]["rnumel"], k["symbolic"]["numel"]) == (("7", f"7*{n}") if dim else (n, f"7*{n}"))
    assert len(loads) == 1


def test_softmax_rows_of_dynamic_length(guards, loads):
    call = _check_once(lambda x: torch.softmax(x * 3, -1), lambda n: (torch.randn(4, n),), (5, 9, 17))
    assert len(call.kernels) == 1 and "for roff in range" in call.kernels[0]["source"]
    assert len(loads) == 1


@pytest.mark.parametrize("dyn_rows", [True, False])
def test_layernorm(guards, dyn_rows):
    def make(n):
        if dyn_rows:
            return _marked(torch.randn(n, 8), 0), torch.randn(8), torch.randn(8)
        return _marked(torch.randn(3, n), 1), _marked(torch.randn(n), 0), _marked(torch.randn(n), 0)

    call = _check_once(lambda x, w, b: F.layer_norm(x, x.shape[-1:], w, b), make, (4, 6, 13), dynamic=None)
    (k,) = call.kernels
    assert ("for roff in range" in k["source"]) == (not dyn_rows)


def test_views_with_dynamic_dims(guards):
    def f(x):
        y = (x * 2).view(x.shape[0], -1, 2).sum(-1)  # a view of a lazy value: index remapping
        z = y.t().reshape(-1) + 1  # transpose + reshape of a realized buffer
        return y[1:] * 3, z, x.unsqueeze(1).expand(-1, 3, -1).sum(1)

    call = _check_once(f, lambda n: (torch.randn(n, 2 * n),), (3, 5, 8))
    assert "_empty(" in call.wrapper_source and call.kernels


def test_matmul_extern_and_epilogue(guards, loads):
    call = _check_once(lambda x, w, b: torch.relu(x @ w + b), lambda n: (torch.randn(n, 5), torch.randn(5, 3), torch.randn(3)), (2, 7, 12))  # fmt: skip
    assert dict(call.fallbacks) in ({"aten.mm.default": 1}, {"aten.addmm.default": 1})
    assert len(loads) == len(call.kernels) == 1


def test_mlp_forward_backward_one_compile_each(guards, loads):
    torch.manual_seed(0)
    m = MLP()
    ref = copy.deepcopy(m)
    _fresh()
    cm = torch.compile(m, backend="fxlens", dynamic=True)
    for n in (3, 6, 10):
        x = torch.randn(n, 32)
        out, r = cm(x), ref(x)
        torch.testing.assert_close(out, r, atol=1e-5, rtol=1e-4)
        out.square().sum().backward()
        r.square().sum().backward()
        for p, q in zip(m.parameters(), ref.parameters(), strict=True):
            torch.testing.assert_close(p.grad, q.grad, atol=1e-5, rtol=1e-4)
    assert sorted(c.kind for c in compile_fx.COMPILED) == ["backward", "forward"]
    assert all(c.dynamic for c in compile_fx.COMPILED) and not compile_fx.DYNAMIC_FALLBACKS
    assert len(loads) == sum(len(c.kernels) for c in compile_fx.COMPILED)
    bwd = next(c for c in compile_fx.COMPILED if c.kind == "backward")
    assert any(
        k["symbolic"]["rnumel"] in bwd.size_symbols for k in bwd.kernels if "symbolic" in k
    )  # bias grads


def test_mark_dynamic_one_dim(guards, loads):
    def f(x):
        return torch.softmax(x, -1) * x.sum(0)

    _fresh()
    cfn = torch.compile(f, backend="fxlens")
    for n in (4, 7, 12):
        x = torch.randn(n, 5)
        torch._dynamo.mark_dynamic(x, 0)
        torch.testing.assert_close(cfn(x), f(x))
    (call,) = compile_fx.COMPILED
    assert call.dynamic and len(call.size_symbols) == 1  # dim 1 stays static
    assert "(5, 1, )" in call.wrapper_source or ", 5, " in call.wrapper_source


def test_automatic_dynamic_after_a_shape_change(guards, loads):
    def f(x):
        return (x.cos() + 1).mean(-1)

    _fresh()
    cfn = torch.compile(f, backend="fxlens")  # no dynamic=True: torch turns dynamic on the change
    for n in (4, 9):
        x = torch.randn(n, 6)
        torch.testing.assert_close(cfn(x), f(x))
    static, dynamic = compile_fx.COMPILED
    assert not static.dynamic and dynamic.dynamic
    n_loads = len(loads)
    x = torch.randn(15, 6)
    torch.testing.assert_close(cfn(x), f(x))  # shape C: served by the dynamic graph
    assert len(compile_fx.COMPILED) == 2 and len(loads) == n_loads


_OPS = {
    "argmax": lambda x: x.argmax(0) + x.argmin(1).sum(),
    "var": lambda x: x.var(0),
    "prod_any": lambda x: (x * 0.5 + 1).prod(1) + (x > 0.5).any(1),
    "max_dim": lambda x: x.max(1)[0] + x.max(1)[1],
    "permute": lambda x: (x.permute(1, 0) * 2).contiguous() + 1,
    "select": lambda x: x.select(0, -1) * 2 + x[1],
    "slice_step": lambda x: x[:, 1::2] * 2,
    "cat": lambda x: torch.cat([x, x * 2], 1).sum(0),
    "gather": lambda x: x.gather(1, (torch.arange(x.shape[0]) % x.shape[1]).unsqueeze(1)) + 1,
    "embedding": lambda x: F.embedding(torch.tensor([[0, 1], [1, 0]]), x) * 2,
    "where": lambda x: torch.where(x > 0, x, x.sum(0)),
    "log_softmax0": lambda x: F.log_softmax(x, 0),
    "cross_entropy": lambda x: F.cross_entropy(x, torch.zeros(x.shape[0], dtype=torch.long)),
    "expand": lambda x: x[:, :1].expand(-1, x.shape[1]) * x,
    "t_reshape": lambda x: (x.t() * 2).reshape(-1)[1:] + 1,
    "split": lambda x: sum(t.sum() for t in x.split([1, x.shape[0] - 1])),
    "arange": lambda x: x + torch.arange(x.shape[1] * 2)[::2],
    "int": lambda x: ((x * 10).long() + 1).sum(0),
    "cumsum": lambda x: x.cumsum(1) * 2,  # a scan over a symbolic row: looped, carrying the total
    "floor_divide": lambda x: torch.floor_divide(x * 10, 3) + torch.remainder(x, 0.7),
}


@pytest.mark.parametrize("op", sorted(_OPS))
def test_ops_under_symbolic_sizes(guards, op):
    f = _OPS[op]
    _check_once(f, lambda n: (torch.randn(n, n + 2),), (3, 4, 6))


def test_fallback_specializes_and_says_why(guards, artifacts):
    def f(x):
        return x * ((2 - x.shape[0]) % 3)  # Python's % of a negative size: no Triton text for it

    _fresh()
    cfn = torch.compile(f, backend="fxlens", dynamic=True)
    for n in (3, 5, 8):
        x = torch.randn(n, 4)
        torch.testing.assert_close(cfn(x), f(x))
    (fb,) = compile_fx.DYNAMIC_FALLBACKS
    assert fb["graph"] == "inference" and "PythonMod" in fb["reason"] and "negative" in fb["reason"]
    assert [a["reason"] for a in artifacts["dynamic_fallback"]] == [fb["reason"]]
    assert len(compile_fx.COMPILED) == 3 and not any(c.dynamic for c in compile_fx.COMPILED)  # one per shape


def test_float_of_a_size_and_precomputed_max(guards, loads):
    def f(x):
        return (x * (x.shape[0] / 2))[: max(x.shape[0] - 2, 1)] + 1  # a SymFloat, a Max(...) size

    call = _check_once(f, lambda n: (torch.randn(n, 3),), (4, 7, 10))
    (k,) = call.kernels
    n = _sym(call, "arg2", 0)
    assert f"ps0 = max(1, (-2 + {n}))" in call.wrapper_source  # the wrapper computes the Max ...
    assert "_empty((ps0, " in call.wrapper_source  # ... and allocates with it
    assert f"* ({n} / 2)" in k["source"] and len(loads) == 1


def test_unaudited_lowerings_run_as_aten_under_symbolic_sizes(guards):
    call = _check_once(lambda x: F.avg_pool2d(x, 2) * 2, lambda n: (torch.randn(1, 2, 3, n),), (4, 6, 9))
    assert call.static_only == {"aten.avg_pool2d.default": "lower_pool lowers static sizes only"}
    assert dict(call.fallbacks) == {"aten.avg_pool2d.default": 1}


def test_flip_with_symbolic_sizes(guards):
    # cumsum's backward (flip, cumsum, flip) ran as ATen under dynamic=True
    call = _check_once(lambda x: x.flip(0, 1) * 2, lambda n: (torch.randn(n, n + 1),), (2, 4, 9))
    assert call.dynamic and not call.static_only and not call.fallbacks


def test_dropout_masks_with_symbolic_sizes(guards):
    _fresh()
    torch.manual_seed(0)
    cfn = torch.compile(lambda x: F.dropout(x, 0.5, True), backend="fxlens", dynamic=True)
    kept = []
    for n in (40, 60, 90):
        x = torch.randn(n, 8) + 3
        y = cfn(x)
        mask = y != 0
        torch.testing.assert_close(y[mask], x[mask] * 2)
        kept.append(mask.float().mean().item())
    assert all(0.35 < k < 0.65 for k in kept), kept
    (call,) = compile_fx.COMPILED
    assert call.dynamic and not call.static_only  # the in-kernel Philox lowering handles symbolic sizes


def test_artifacts_show_symbolic_sizes(artifacts):
    call = _check_once(lambda x: (x + 1).sum(-1), lambda n: (torch.randn(3, n),), (4, 8, 9))
    ir = artifacts["ir"][0]
    (kernel,) = artifacts["kernel"]
    rows, cols = _sym(call, "arg2", 0), _sym(call, "arg2", 1)
    assert kernel["symbolic"]["rnumel"] == cols and kernel["numel"] == 3 * 4  # numbers at the first call
    assert kernel["symbolic"]["size_args"] == [cols] and f"xindex * {cols} + rindex" in kernel["source"]
    assert f"input [{rows}, {cols}]" in ir and f"reduce sum dims=[1] of [{rows}, {cols}] -> [{rows}]" in ir
    assert f"    {cols} = " in artifacts["wrapper"][0]


def test_index_equal_tells_symbols_with_equal_hints_apart():
    s0, s1 = sympy.symbols("s0 s1", positive=True, integer=True)
    with bind({s0: 4, s1: 4}):
        assert not index_equal("(xindex % s0)", "(xindex % s1)", 4 * s0, 1)
        assert index_equal("(xindex // s0) * s0 + (xindex % s0)", "xindex", s1 * s0, 1)


def test_int32_kernel_refuses_sizes_past_its_indexing():
    ck = runtime.CompiledKernel("k", "forward", None, 0, 1, 1, 1, [], [], [], [], size_args=["s0"])
    with pytest.raises(RuntimeError, match="int64"):
        ck(torch.empty(1), 2**31, xnumel=2**31, rnumel=1)


@pytest.mark.parametrize("hook", ["FXLENS_CHECK_KERNELS", "FXLENS_KERNEL_FALLBACK"])
def test_hooks_replay_kernels_at_run_time_sizes(monkeypatch, hook):
    """The ATen replays behind the bisector's hooks evaluate symbolic shapes at each call's sizes."""
    checks: list = []
    monkeypatch.setenv(hook, "1" if hook == "FXLENS_CHECK_KERNELS" else "0,1")
    monkeypatch.setattr(runtime, "log_json", lambda name, obj: checks.append(obj))

    def f(x, b):
        return torch.softmax(x + b, -1).sum(0) * x.shape[0]

    _check_once(f, lambda n: (torch.randn(n, n + 2), torch.randn(n + 2)), (3, 5))
    if hook == "FXLENS_CHECK_KERNELS":
        assert len(checks) >= 2 and all(c["ok"] for c in checks)


@pytest.mark.slow
def test_tiny_hf_gpt2_dynamic_sequence_length():
    transformers = pytest.importorskip("transformers", reason="transformers is not installed")
    cfg = transformers.GPT2Config(n_layer=1, n_head=2, n_embd=32, vocab_size=64, n_positions=16)
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(cfg).eval()
    ref = copy.deepcopy(model)
    _fresh()
    cm = torch.compile(model, backend="fxlens", dynamic=True)
    for t in (5, 8, 11):
        ids = torch.randint(0, 64, (2, t))
        out, r = cm(ids, labels=ids), ref(ids, labels=ids)
        torch.testing.assert_close(out.logits, r.logits, atol=1e-4, rtol=1e-4)
        out.loss.backward()
        r.loss.backward()
    for p, q in zip(model.parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(p.grad, q.grad, atol=1e-4, rtol=1e-3)
    assert compile_fx.COMPILED and all(c.dynamic for c in compile_fx.COMPILED)
    assert len(compile_fx.COMPILED) == 4  # forward + backward of the model and of the loss (a graph break)
    assert not compile_fx.DYNAMIC_FALLBACKS


def _groupnorm_silu_training(dynamic, shapes):
    """GroupNorm+SiLU (bench/backend.py's case), forward and backward at each shape, against an eager
    copy; returns the kernels compiled for it."""
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.GroupNorm(4, 16), torch.nn.SiLU())
    ref = copy.deepcopy(m)
    _fresh()
    cm = torch.compile(m, backend="fxlens", dynamic=dynamic)
    for shape in shapes:
        x = torch.randn(shape, requires_grad=True)
        xr = x.detach().clone().requires_grad_()
        out, r = cm(x), ref(xr)
        torch.testing.assert_close(out, r, atol=1e-5, rtol=1e-4)
        g = torch.randn(shape)
        out.backward(g)
        r.backward(g)
        torch.testing.assert_close(x.grad, xr.grad, atol=1e-5, rtol=1e-4)
        for p, q in zip(m.parameters(), ref.parameters(), strict=True):
            torch.testing.assert_close(p.grad, q.grad, atol=1e-5, rtol=1e-4)
            p.grad = q.grad = None
    return sum(len(c.kernels) for c in compile_fx.COMPILED)


def test_groupnorm_silu_training_symbolic_no_aten_calls(guards):
    """Group norm's graphs under dynamic=True take views with `as_strided` of symbolic sizes, and its
    backward turns the spatial size into a tensor (`scalar_tensor(s1)`, `pow`, `true_divide`): all
    lowered, so nothing runs as ATen and the kernels are the static compile's. The spatial size
    changes between calls too: the scalar the kernels compute from it must follow."""
    kernels = _groupnorm_silu_training(True, [(2, 16, 4, 4), (3, 16, 4, 4), (3, 16, 6, 6)])
    assert sorted(c.kind for c in compile_fx.COMPILED) == ["backward", "forward"]
    assert all(c.dynamic for c in compile_fx.COMPILED) and not compile_fx.DYNAMIC_FALLBACKS
    assert [dict(c.fallbacks) for c in compile_fx.COMPILED] == [{}, {}]
    assert kernels == _groupnorm_silu_training(False, [(3, 16, 6, 6)])
