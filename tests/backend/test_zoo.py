"""Real models through `backend="fxlens"`: HF Llama, BERT, T5, BART, ViT (built from tiny configs,
random weights, no download) and plain-torch ResNet / EmbeddingBag nets, forward and forward+backward
against eager; kernel and fallback counts; dynamic=True with two sequence lengths. Plus op-level
regressions for what running them found (ops that were ATen fallbacks)."""

from __future__ import annotations

import collections
import copy
import os

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

pytestmark = pytest.mark.triton
os.environ.setdefault("HF_HUB_OFFLINE", "1")

# ops any model may run as ATen calls: matmuls, convolutions, attention, embedding bags
EXTERN_OK = {
    "mm", "addmm", "bmm", "convolution", "convolution_backward", "_embedding_bag", "_embedding_bag_backward",
    "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_flash_attention_for_cpu_backward",
}  # fmt: skip
OUT_TOL, GRAD_TOL = dict(atol=1e-5, rtol=1e-4), dict(atol=1e-5, rtol=1e-3)


def _hf(cfg_name, model_name, **cfg):
    transformers = pytest.importorskip("transformers")
    return getattr(transformers, model_name)(getattr(transformers, cfg_name)(**cfg))


def _ids(t, lo=0):
    return torch.randint(lo, 96, (2, t))


def _mask(t):
    m = torch.ones(2, t, dtype=torch.long)
    m[1, t - 3 :] = 0  # the second sequence is padded
    return m


def llama(layers=2):
    m = _hf("LlamaConfig", "LlamaForCausalLM", vocab_size=96, hidden_size=32, intermediate_size=64,
            num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32)  # fmt: skip
    return m, lambda t: {"input_ids": _ids(t), "attention_mask": _mask(t)}


def llama1():
    """Llama with one decoder layer: the dynamic-shape test's (a second layer compiles the same
    code again at the same symbolic sizes; test_model_matches_eager runs two)."""
    return llama(layers=1)


def bert():
    m = _hf("BertConfig", "BertModel", vocab_size=96, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
            intermediate_size=64, max_position_embeddings=32, type_vocab_size=2, attn_implementation="eager")  # fmt: skip

    def inputs(t):
        types = (torch.arange(t) >= t // 2).long().expand(2, t)
        return {"input_ids": _ids(t), "token_type_ids": types, "attention_mask": _mask(t)}

    return m, inputs


def t5():
    m = _hf("T5Config", "T5ForConditionalGeneration", vocab_size=96, d_model=32, d_kv=8, d_ff=64, num_layers=2,
            num_decoder_layers=2, num_heads=4, relative_attention_num_buckets=8, relative_attention_max_distance=16,
            decoder_start_token_id=0)  # fmt: skip
    return m, lambda t: {"input_ids": _ids(t), "labels": _ids(6)}


def bart():
    m = _hf("BartConfig", "BartForConditionalGeneration", vocab_size=96, d_model=32, encoder_layers=2,
            decoder_layers=2, encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64,
            decoder_ffn_dim=64, max_position_embeddings=32)  # fmt: skip
    return m, lambda t: {"input_ids": _ids(t, 3), "labels": _ids(6, 3)}


def vit():
    m = _hf("ViTConfig", "ViTForImageClassification", image_size=16, patch_size=4, num_channels=3, hidden_size=32,
            num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, num_labels=5)  # fmt: skip
    return m, lambda t: {"pixel_values": torch.randn(2, 3, 16, 16)}


class _Residual(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.c2, self.b2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

    def forward(self, x):
        return F.relu(x + self.b2(self.c2(F.relu(self.b1(self.c1(x))))))


class ResNet(nn.Module):
    """A small ResNet: strided conv stem, BN, two residual blocks, adaptive average pool."""

    def __init__(self):
        super().__init__()
        self.stem, self.bn = nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.BatchNorm2d(8)
        self.r1, self.r2, self.fc = _Residual(8), _Residual(8), nn.Linear(8, 5)

    def forward(self, x):
        x = self.r2(self.r1(F.relu(self.bn(self.stem(x)))))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


class BagNet(nn.Module):
    """A sequence model without recurrence: embedding bag, padded embedding, conv1d, SiLU,
    layer norm, cumsum, amax, cat, log_softmax."""

    def __init__(self):
        super().__init__()
        self.bag, self.emb = nn.EmbeddingBag(96, 16, mode="mean"), nn.Embedding(96, 16, padding_idx=0)
        self.conv, self.ln, self.fc = nn.Conv1d(16, 16, 3, padding=1), nn.LayerNorm(16), nn.Linear(32, 4)

    def forward(self, ids, offsets):
        bag = self.bag(ids.flatten(), offsets)
        h = F.silu(self.conv(self.emb(ids).transpose(1, 2))).transpose(1, 2)
        h = self.ln(h).cumsum(1).amax(1)
        return self.fc(torch.cat([bag, h], -1)).log_softmax(-1)


def resnet():
    return ResNet(), lambda t: {"x": torch.randn(2, 3, 12, 12)}


def bagnet():
    return BagNet(), lambda t: {"ids": _ids(t), "offsets": torch.tensor([0, t])}


def _tensor(out):
    if isinstance(out, torch.Tensor):
        return out
    return out.logits if getattr(out, "logits", None) is not None else out.last_hidden_state


def _loss(out):
    if getattr(out, "loss", None) is not None:
        return out.loss
    loss = _tensor(out).square().mean()
    pooled = getattr(out, "pooler_output", None)
    return loss if pooled is None else loss + pooled.square().mean()


def run_model(make, train: bool, dynamic=False, lengths=(8,)):
    """Compile `make()`'s model, run it at each sequence length beside an eager copy, compare outputs
    (and parameter grads when training); returns (max abs output error, kernels, fallbacks by op)."""
    from fxlens.backend import compile_fx

    torch.manual_seed(0)
    model, inputs = make()
    model.train(train and isinstance(model, ResNet))  # HF dropout off; ResNet's BN in training mode
    ref = copy.deepcopy(model)
    torch._dynamo.reset()
    compile_fx.COMPILED.clear()
    cm = torch.compile(model, backend="fxlens", dynamic=dynamic)
    err = 0.0
    for t in lengths:
        torch.manual_seed(t)
        x = inputs(t)
        with torch.set_grad_enabled(train):
            out, r = cm(**x), ref(**x)
        torch.testing.assert_close(_tensor(out), _tensor(r), **OUT_TOL)
        err = max(err, (_tensor(out) - _tensor(r)).abs().max().item())
        if train:
            model.zero_grad()
            ref.zero_grad()
            _loss(out).backward()
            _loss(r).backward()
            for (name, p), q in zip(model.named_parameters(), ref.parameters(), strict=True):
                assert (p.grad is None) == (q.grad is None), name
                if q.grad is not None:
                    torch.testing.assert_close(p.grad, q.grad, **GRAD_TOL, msg=name)
            for b, rb in zip(model.buffers(), ref.buffers(), strict=True):  # BN running stats
                torch.testing.assert_close(b, rb)
    fallbacks: collections.Counter = collections.Counter()
    for call in compile_fx.COMPILED:
        fallbacks.update({op.removeprefix("aten.").split(".")[0]: n for op, n in call.fallbacks.items()})
    return err, sum(len(c.kernels) for c in compile_fx.COMPILED), fallbacks, list(compile_fx.COMPILED)


FAST = [llama, bert, resnet, bagnet]
SLOW = [t5, bart, vit]


@pytest.mark.parametrize("make", FAST + [pytest.param(m, marks=pytest.mark.slow) for m in SLOW],
                         ids=lambda m: m.__name__)  # fmt: skip
@pytest.mark.parametrize("train", [True, False], ids=["train", "inference"])
def test_model_matches_eager(make, train):
    err, kernels, fallbacks, calls = run_model(make, train)
    kinds = {c.kind for c in calls}
    assert kinds == ({"forward", "backward"} if train else {"inference"})
    assert kernels >= 5
    # everything but matmuls, convolutions, attention and embedding bags is a generated kernel
    # (rotary embeddings' backward and T5/BART's label shift were slice_scatter fallbacks)
    assert set(fallbacks) <= EXTERN_OK, fallbacks


# default run: Llama (one layer) and the EmbeddingBag net in inference; dynamic training and the other LMs are
# slow (test_dynamic.py covers dynamic training of small nets by default)
@pytest.mark.parametrize("make", [llama1, bagnet, pytest.param(bert, marks=pytest.mark.slow),
                                  pytest.param(t5, marks=pytest.mark.slow),
                                  pytest.param(bart, marks=pytest.mark.slow)], ids=lambda m: m.__name__)  # fmt: skip
@pytest.mark.parametrize(
    "train", [pytest.param(True, marks=pytest.mark.slow), False], ids=["train", "inference"]
)
def test_model_dynamic_two_lengths_one_compile(make, train):
    err, kernels, fallbacks, calls = run_model(make, train, dynamic=True, lengths=(8, 12))
    assert [c.dynamic for c in calls] == [True] * len(calls)  # sizes are kernel arguments
    assert len(calls) == (2 if train else 1), [c.kind for c in calls]  # one compile for both lengths
    assert not any(c.static_only for c in calls), [c.static_only for c in calls]
    # the embedding backward (index_put) and cumsum's backward (flip) are kernels here too
    assert set(fallbacks) <= EXTERN_OK, fallbacks


# --- op-level regressions: each was an ATen fallback before the model runs above -----------------


def _fwd_bwd(fn, *args):
    from fxlens.backend import compile_fx

    torch._dynamo.reset()
    compile_fx.COMPILED.clear()
    a1 = [a.clone().requires_grad_(a.is_floating_point()) for a in args]
    a2 = [a.clone().requires_grad_(a.is_floating_point()) for a in args]
    ref, out = fn(*a1), torch.compile(fn, backend="fxlens")(*a2)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-4)
    g = torch.randn_like(ref)
    ref.backward(g)
    out.backward(g)
    for p, q in zip(a1, a2, strict=True):
        if p.grad is not None:
            torch.testing.assert_close(q.grad, p.grad, atol=1e-5, rtol=1e-4)
    return {op for c in compile_fx.COMPILED for op in c.fallbacks}


def test_eval_batch_norm_is_a_kernel():
    torch.manual_seed(0)
    bn = nn.BatchNorm2d(4).eval()
    bn.running_mean.uniform_(-1, 1)
    bn.running_var.uniform_(0.5, 2)
    x = torch.randn(2, 4, 3, 3)
    from fxlens.backend import compile_fx

    torch._dynamo.reset()
    compile_fx.COMPILED.clear()
    with torch.no_grad():
        out = torch.compile(bn, backend="fxlens")(x)
    torch.testing.assert_close(out, bn(x), atol=1e-5, rtol=1e-4)
    (call,) = compile_fx.COMPILED
    assert call.fallbacks == {} and len(call.kernels) == 1


def test_instance_norm_is_kernels():
    assert _fwd_bwd(lambda x: F.instance_norm(x), torch.randn(2, 4, 5)) == set()


def test_slice_backward_has_no_slice_scatter():
    # rotary embeddings' rotate_half: x[..., :h], x[..., h:]; their backward was two slice_scatters
    def rotate_half(x):
        h = x.shape[-1] // 2
        return torch.cat((-x[..., h:], x[..., :h]), -1) * 2 + x[:, 1:3].sum()

    assert _fwd_bwd(rotate_half, torch.randn(3, 4, 8)) == set()


def test_vector_norm_is_a_reduction():
    assert (
        _fwd_bwd(lambda x: torch.linalg.vector_norm(x, 3, dim=0) + x.norm(dim=-1).sum(), torch.randn(5, 6))
        == set()
    )


@pytest.mark.parametrize(
    "pad,value,dtype",
    [((1, 2), 0.0, torch.float32), ((1, 2, 0, 1), 0.5, torch.float32), ((-1, 2, 0, -2), 0.0, torch.float32),
     ((2, 1, 1, 0, 1, 1), -3.0, torch.float16), ((1, 1, 2, 0), 7, torch.int64), ((0, 1), 1, torch.bool)],
    ids=["last", "two_dims_value", "negative_crops", "three_dims_fp16", "int", "bool"],
)  # fmt: skip
def test_constant_pad_is_one_kernel(compiled, guards, pad, value, dtype):
    # F.pad(mode="constant") (Swin's window padding, F.unfold) was an ATen fallback
    x = torch.randn(2, 3, 4, 5).mul(4).to(dtype) if dtype != torch.bool else torch.randn(2, 3, 4, 5) > 0

    def f(x):
        return F.pad(x * 2 if dtype != torch.bool else x, pad, value=value)

    out, calls = compiled(f, x)
    torch.testing.assert_close(out, f(x))
    assert calls[0].fallbacks == {} and len(calls[0].kernels) == 1  # the multiply fuses into the pad
    guards.check()


def test_constant_pad_backward_and_dynamic(compiled):
    x = torch.randn(3, 6, requires_grad=True)

    def f(x):
        return F.pad(x.sin(), (2, -1), value=0.25).exp()

    ref = f(x)
    ref.sum().backward()
    g, x.grad = x.grad, None
    out, calls = compiled(f, x)
    out.sum().backward()
    torch.testing.assert_close(out, ref)
    torch.testing.assert_close(x.grad, g)
    assert not any(c.fallbacks for c in calls)
    fn = torch.compile(lambda x: F.pad(x, (1, 2), value=-1.0), backend="fxlens", dynamic=True)
    from fxlens.backend import compile_fx

    compile_fx.COMPILED.clear()
    for n in (5, 9):
        y = torch.randn(2, n)
        torch.testing.assert_close(fn(y), F.pad(y, (1, 2), value=-1.0))
    assert [c.dynamic for c in compile_fx.COMPILED] == [True] and not compile_fx.COMPILED[0].fallbacks


def _dynamic_calls(fn, make_args, ns=(5, 9)):
    from fxlens.backend import compile_fx

    torch._dynamo.reset()
    compile_fx.COMPILED.clear()
    cf = torch.compile(fn, backend="fxlens", dynamic=True)
    for n in ns:
        args = make_args(n)
        torch.testing.assert_close(cf(*args), fn(*args))
    return list(compile_fx.COMPILED)


def test_embedding_backward_index_put_with_symbolic_sizes():
    # an LM's embedding backward (index_put, accumulate) ran as ATen under dynamic=True (every
    # HF model's dynamic training graph had one); lower/index.py is audited for symbolic sizes now
    torch.manual_seed(0)
    emb = nn.Embedding(20, 8)
    ref = copy.deepcopy(emb)
    from fxlens.backend import compile_fx

    torch._dynamo.reset()
    compile_fx.COMPILED.clear()
    ce = torch.compile(emb, backend="fxlens", dynamic=True)
    for n in (5, 9):
        ids = torch.randint(0, 20, (2, n))
        ids[0, :3] = 4  # repeated ids accumulate
        out, r = ce(ids), ref(ids)
        torch.testing.assert_close(out, r)
        out.exp().sum().backward()
        r.exp().sum().backward()
        torch.testing.assert_close(emb.weight.grad, ref.weight.grad, atol=1e-5, rtol=1e-5)
    calls = list(compile_fx.COMPILED)
    assert [c.kind for c in calls] == ["forward", "backward"] and all(c.dynamic for c in calls)
    assert not any(c.fallbacks or c.static_only for c in calls), [(c.fallbacks, c.static_only) for c in calls]
    assert any("atomic_add" in k["source"] for k in calls[1].kernels)


def test_index_put_and_scatter_add_with_symbolic_sizes():
    def put(x, i, v):  # negative indices wrap by the symbolic size
        return x.index_put((i,), v * 2, accumulate=True) + x.index_put((i,), v)

    calls = _dynamic_calls(
        put, lambda n: (torch.randn(n, 3), torch.tensor([0, -1, 1, -2]), torch.randn(4, 3)), ns=(5, 9)
    )
    assert len(calls) == 1 and calls[0].dynamic and not calls[0].fallbacks, calls[0].fallbacks

    def scatter(x, i, s):
        return x.scatter_add(1, i, s)

    calls = _dynamic_calls(
        scatter,
        lambda n: (torch.zeros(3, n), torch.randint(0, n, (3, n + 2)), torch.randn(3, n + 2)),
        ns=(4, 7),
    )
    assert len(calls) == 1 and calls[0].dynamic and not calls[0].fallbacks, calls[0].fallbacks


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64], ids=str)
def test_clamp_by_tensors_is_a_kernel(compiled, guards, dtype):
    # F.cosine_similarity (CLIP-style losses) clamps by a 0-d tensor: clamp.Tensor was a fallback
    torch.manual_seed(0)
    x = torch.randn(4, 6).mul(5).to(dtype)
    lo, hi = torch.randn(6).mul(2).to(dtype), torch.randn(4, 1).mul(2).add(2).to(dtype)
    if dtype.is_floating_point:
        x[0, 0], lo[1], hi[2, 0] = float("nan"), float("nan"), float("nan")  # NaN anywhere is NaN

    def f(x, lo, hi):
        return torch.clamp(x, lo, hi) + torch.clamp(x, min=lo) * 2 + torch.clamp(x, max=hi)

    out, calls = compiled(f, x, lo, hi)
    tol = {"atol": 1e-2, "rtol": 1e-2} if dtype == torch.float16 else {}  # eager rounds after each op
    torch.testing.assert_close(out, f(x, lo, hi), equal_nan=True, **tol)
    assert calls[0].fallbacks == {} and len(calls[0].kernels) == 1


def test_cosine_similarity_backward_has_no_fallback():
    a, b = torch.randn(5, 8), torch.randn(5, 8)
    assert _fwd_bwd(lambda a, b: F.cosine_similarity(a, b, dim=-1), a, b) == set()


def test_new_lowerings_compile_for_cuda():
    # the interpreter never checks CUDA typing (NaN flags on integer maxima, masked index math)
    from test_cuda_codegen import _cuda_kernels, _ptx

    cases = [
        (lambda x, lo, hi: (torch.clamp(x, lo, hi) + torch.clamp(x, min=lo),), dt)
        for dt in (torch.float32, torch.int64)
    ]
    for fn, dt in cases:
        for rec in _cuda_kernels(fn, ((4, 6), dt), ((6,), dt), ((4, 1), dt)):
            assert ".entry" in _ptx(rec)
    for rec in _cuda_kernels(
        lambda x: (F.pad(x * 2, (1, 2, -1, 1), value=0.5),), ((2, 3, 4, 5), torch.float32)
    ):
        assert ".entry" in _ptx(rec)


def test_as_strided_scatter_over_the_whole_input_is_a_kernel(compiled):
    # as_strided's backward when the view covers all of x (Swin's pooled output) was an ATen call
    # (no guard regions: as_strided offsets are absolute in the storage, which guards shift)
    x, src = torch.randn(2, 6, 1), torch.randn(2, 6)

    def whole(x, src):
        return torch.ops.aten.as_strided_scatter(x * 2, src.exp(), [2, 6], [6, 1], 0)

    out, calls = compiled(whole, x, src)
    torch.testing.assert_close(out, whole(x, src))
    assert calls[0].fallbacks == {}

    def part(x, src):  # a strided part of x: still ATen's, and still right
        return torch.ops.aten.as_strided_scatter(x * 2, src[:, :3], [2, 3], [6, 2], 1)

    out, calls = compiled(part, x, src)
    torch.testing.assert_close(out, part(x, src))
    assert calls[0].fallbacks == {"aten.as_strided_scatter.default": 1}

    def transposed(x, src):  # x's storage order is not its index order: ATen's
        return torch.ops.aten.as_strided_scatter(x.t(), src, [2, 6], [6, 1], 0)

    y = torch.randn(6, 2)
    out, calls = compiled(transposed, y, src)
    torch.testing.assert_close(out, transposed(y, src))
