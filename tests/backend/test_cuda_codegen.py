"""CUDA code generation without a GPU: graphs are lowered with fake CUDA tensors and every generated
kernel is compiled ahead of time by Triton for an sm_90 target (through PTX), which the interpreter
never checks: libdevice calls, NaN-propagation flags, atomics, pointer and index types.
Values can only be checked on a real GPU (bench/gpu.py)."""

from __future__ import annotations

import copy
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.proxy_tensor import make_fx
from torch.fx.passes.fake_tensor_prop import FakeTensorProp

from fxlens.backend import compile_fx
from fxlens.backend.compile_fx import COMPILED, compile_aten, compile_graph

triton = pytest.importorskip("triton")
try:
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
except ImportError:  # pragma: no cover - older Triton layouts
    pytest.skip("this Triton has no ahead-of-time compile API", allow_module_level=True)

SM90 = GPUTarget("cuda", 90, 32)


def _cuda_kernels(fn, *specs):
    """Lower `fn` (inference) for fake CUDA inputs of `specs` [(shape, dtype)]; the kernel records."""
    COMPILED.clear()
    with FakeTensorMode():
        xs = [
            torch.empty(s, dtype=dt, device="cuda").random_(1, 5) if not dt.is_floating_point
            else torch.empty(s, dtype=dt, device="cuda")
            for s, dt in specs
        ]  # fmt: skip
        compile_graph(torch.fx.symbolic_trace(fn), xs)
    kernels = [k for call in COMPILED for k in call.kernels]
    assert kernels, "nothing was lowered to a kernel"
    return kernels


def _ptx(rec) -> str:
    spec = importlib.util.spec_from_file_location(f"xk_{rec['name']}", rec["source_path"])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    xb, rb = rec["blocks"]
    src = ASTSource(getattr(mod, rec["name"]), rec["signature"], constexprs={"XBLOCK": xb, "RBLOCK": rb})
    return triton.compile(src, target=SM90).asm["ptx"]


def _math(x):
    return (
        torch.tanh(x) + torch.log1p(x.abs()) * torch.expm1(x) + x.abs().pow(2.5) + x.pow(3) + torch.erf(x),
    )


def test_gpu_math_uses_libdevice_and_cpu_keeps_composites():
    (rec,) = _cuda_kernels(_math, ((64, 32), torch.float32))
    for name in ("tanh", "log1p", "expm1", "pow"):
        assert f"libdevice.{name}(" in rec["source"], name
    assert "from triton.language.extra import libdevice" in rec["source"]
    ptx = _ptx(rec)
    assert "tanh" in ptx or "ex2" in ptx  # libdevice was linked in, not left as an unresolved call

    x = torch.randn(64, 32)
    call = compile_aten(make_fx(_math)(x), [x], "inference", True)
    assert call.kernels and all("libdevice" not in k["source"] for k in call.kernels)
    torch.testing.assert_close(call([x])[0], _math(x)[0], rtol=1e-4, atol=1e-4)


CASES = {
    "layernorm_gelu_softmax_fp16": (
        lambda x, w: (F.gelu(F.layer_norm(x, (64,), w)).softmax(-1),),
        [((16, 64), torch.float16), ((64,), torch.float16)],
    ),
    "cross_entropy": (
        lambda x, t: (F.cross_entropy(x, t),),
        [((8, 40), torch.float32), ((8,), torch.int64)],
    ),
    "looped_row_sum_amax_argmax": (
        lambda x: (x.sum(-1), x.amax(-1), x.argmax(-1)),
        [((4, 20000), torch.float32)],
    ),
    "cumsum_bf16": (lambda x: (x.cumsum(1),), [((8, 100), torch.bfloat16)]),
    # round-to-nearest-even casts (a bit-level helper) and sums through tl.sum's combine function
    "casts_rtne_sum": (
        lambda x: (x.bfloat16(), x.half(), (x.bfloat16() * 3).float(), x.sum(-1)),
        [((8, 100), torch.float32)],
    ),
    "pooling": (
        lambda x: (F.max_pool2d(x, 3, 2, 1), F.avg_pool2d(x, 2)),
        [((2, 3, 10, 10), torch.float32)],
    ),
    "index_put_accumulate": (
        lambda x, i, v: (x.index_put((i,), v, accumulate=True),),
        [((50, 8), torch.float32), ((30,), torch.int64), ((30, 8), torch.float32)],
    ),
    "int_division": (
        lambda a, b: (a // b, a % b, torch.div(a.float(), b, rounding_mode="trunc")),
        [((256,), torch.int64), ((256,), torch.int64)],
    ),
    "dropout_random": (
        lambda x: (F.dropout(x, 0.3, training=True) + torch.rand_like(x),),
        [((1000,), torch.float32)],
    ),
    # loops until the block has converged (a while over a reduction), float64 helpers
    "igamma_igammac": (
        lambda a, x: (torch.igamma(a, x), torch.igammac(a, x)),
        [((256,), torch.float32), ((256,), torch.float32)],
    ),
    "histc_atomic_count": (lambda x: (torch.histc(x, bins=10, min=-1, max=1),), [((500,), torch.float32)]),
    "nan_propagating_max_relu_clamp": (
        lambda x, y: (torch.maximum(x, y).relu().clamp(-1, 1),),
        [((4, 64), torch.float32), ((64,), torch.float32)],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_kernel_compiles_for_sm90(case):
    fn, specs = CASES[case]
    kernels = _cuda_kernels(fn, *specs)
    for rec in kernels:
        assert ".entry " + rec["name"] in _ptx(rec), rec["name"]


# -- the GPU benchmark's suite (bench/gpu.py), forward and training, cross-compiled for sm_90 --------

ROOT = Path(__file__).resolve().parents[2]


def _gpu_suite():
    spec = importlib.util.spec_from_file_location("fxlens_bench_gpu", ROOT / "bench" / "gpu.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _aten_graphs(monkeypatch, model, make_args, train):
    """The ATen graphs (and input metas) fxlens gets for `model` on CPU; run eagerly to save time."""
    seen = []

    def record(gm, inputs, kind, fusion, *a, **k):
        metas = [
            (tuple(t.shape), tuple(t.stride()), t.dtype) if isinstance(t, torch.Tensor) else t for t in inputs
        ]
        seen.append((copy.deepcopy(gm), metas, kind))

        def run(args):
            return gm(*args)

        run._boxed_call = True  # AOTAutograd passes one list, as to compile_aten's wrapper
        return run

    monkeypatch.setattr(compile_fx, "compile_aten", record)
    torch._dynamo.reset()
    fn = torch.compile(
        copy.deepcopy(model) if isinstance(model, torch.nn.Module) else model, backend="fxlens"
    )
    args = [a.detach().requires_grad_(train and a.is_floating_point()) for a in make_args()]
    with torch.set_grad_enabled(train):  # as bench/gpu.py: forward cases run under no_grad
        out = fn(*args)
    if train:
        out.float().square().mean().backward()
    monkeypatch.undo()
    torch._dynamo.reset()
    return seen


def _lower_for_cuda(gm, metas, kind):
    """Re-lower a CPU-captured ATen graph for CUDA: device arguments and every meta moved to cuda."""
    for n in gm.graph.nodes:
        if isinstance(n.kwargs.get("device"), torch.device):
            n.kwargs = {**n.kwargs, "device": torch.device("cuda")}
    gm.recompile()
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    with mode:
        xs = [
            torch.empty_strided(m[0], m[1], dtype=m[2], device="cuda") if isinstance(m, tuple) else m
            for m in metas
        ]
        FakeTensorProp(gm, mode).propagate_dont_convert_inputs(*xs)
        return compile_aten(gm, xs, kind, True)


SUITE = [(name, train) for name in ("bias+GELU+residual", "RMSNorm", "LayerNorm", "softmax", "cross-entropy",
                                    "MLP", "GPT-2 block", "conv net") for train in (False, True)]  # fmt: skip
# issue 11's fusion cases (bench/backend_cases.py, which gpu.py runs too): looped reductions over
# 16k-column rows, GroupNorm's reshaped rows, rotary, label smoothing; 7-17 s each here: slow
FUSION_SUITE = [(name, train) for name in ("LayerNorm, 16k-column rows", "softmax, 16k-column rows",
                                           "GroupNorm+SiLU", "masked causal softmax", "SwiGLU MLP", "RMSNorm+rotary",
                                           "log_softmax+NLL, label smoothing") for train in (False, True)]  # fmt: skip


@pytest.mark.parametrize(
    "name,train", SUITE + [pytest.param(*c, marks=pytest.mark.slow) for c in FUSION_SUITE]
)
def test_gpu_suite_kernels_compile_for_sm90(monkeypatch, name, train):
    model, make_args = next((m, a) for n, m, a, _ in _gpu_suite()._cases(dry=True) if n == name)
    graphs = _aten_graphs(monkeypatch, model, make_args, train)
    assert [k for _, _, k in graphs] == (["forward", "backward"] if train else ["inference"])
    compiled = 0
    for gm, metas, kind in graphs:
        call = _lower_for_cuda(gm, metas, kind)
        for rec in call.kernels:
            assert ".entry " + rec["name"] in _ptx(rec), rec["name"]
            compiled += 1
    assert compiled >= len(graphs)  # every graph of the suite has at least one Triton kernel


@pytest.mark.slow
def test_gpu_bench_dry_run_is_correct():
    """bench/gpu.py --dry-run: the GPU script's own path on CPU tensors (fxlens under the interpreter)."""
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "gpu.py"), "--dry-run"], capture_output=True,
                       text=True, timeout=600, cwd=ROOT)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    rows = [line for line in r.stdout.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert len(rows) == len(SUITE) + len(FUSION_SUITE)
    assert all(row.split("|")[3].strip() == "ok" for row in rows), r.stdout
