"""Random numbers generated inside kernels: rand / rand_like / randn / randn_like / bernoulli.

As in inductor: one extern call per graph, `prims.inductor_seeds(count, device)` (torch.randint on
torch's own generator), makes a seed per random op; each kernel then computes Philox(seed, offset)
for the element at flat offset `offset`. So `torch.manual_seed(k)` makes runs reproducible,
consecutive calls draw fresh seeds, and the numbers never match eager bitwise (inductor's don't
either). Dropout reaches here through torch's native_dropout decomposition (`rand_like(x) > p`, see
lower/aot.py); AOTAutograd saves that boolean mask for the backward pass, so backward uses the forward's
mask. FXLENS_FALLBACK_RANDOM=1 runs all of them as ATen calls instead (like inductor's
config.fallback_random).
"""

from __future__ import annotations

import torch

from fxlens.backend import config
from fxlens.backend.ir import Buffer, Pointwise, Value, broadcast_index, contiguous_strides, linear
from fxlens.backend.items import Extern
from fxlens.backend.lower.core import register, shape_of

aten = torch.ops.aten
prims = torch.ops.prims

# Triton's tl.rand / tl.randn (Philox 4x32, 10 rounds; same numbers), inlined as our own helpers:
# the interpreter cannot call Triton's stdlib @jit functions from a module loaded with the knob on.
PHILOX_SOURCE = """
@triton.jit
def _fx_philox(seed, offset):
    k0 = (seed & 0xFFFFFFFF).to(tl.uint32)
    k1 = ((seed >> 32) & 0xFFFFFFFF).to(tl.uint32)
    c0 = offset.to(tl.uint32)
    c1 = c0 * 0
    c2 = c1
    c3 = c1
    for _ in tl.static_range(10):
        _c0 = c0
        _c2 = c2
        c0 = tl.math.umulhi(tl.full([1], 0xCD9E8D57, tl.uint32), _c2) ^ c1 ^ k0
        c2 = tl.math.umulhi(tl.full([1], 0xD2511F53, tl.uint32), _c0) ^ c3 ^ k1
        c1 = tl.mul(tl.full([1], 0xCD9E8D57, tl.uint32), _c2, sanitize_overflow=False)
        c3 = tl.mul(tl.full([1], 0xD2511F53, tl.uint32), _c0, sanitize_overflow=False)
        k0 = tl.add(k0, tl.full([1], 0x9E3779B9, tl.uint32), sanitize_overflow=False)
        k1 = tl.add(k1, tl.full([1], 0xBB67AE85, tl.uint32), sanitize_overflow=False)
    return c0, c1


@triton.jit
def _fx_uniform(x):
    x = x.to(tl.int32, bitcast=True)
    x = tl.where(x < 0, -x - 1, x)
    return x.to(tl.float32) * 4.6566127342e-10


@triton.jit
def _fx_rand(seed, offset):
    c0, c1 = _fx_philox(seed, offset)
    return _fx_uniform(c0)


@triton.jit
def _fx_randn(seed, offset):
    c0, c1 = _fx_philox(seed, offset)
    u1 = tl.maximum(1.0e-7, _fx_uniform(c0))
    u2 = _fx_uniform(c1)
    return tl.sqrt(-2.0 * tl.log(u1)) * tl.cos(6.283185307179586 * u2)
"""

RANDOM_OPS = {
    aten.rand.default: "rand",
    aten.rand_like.default: "rand",
    aten.randn.default: "randn",
    aten.randn_like.default: "randn",
    aten.bernoulli.default: "rand",
    aten.bernoulli.p: "rand",
}


def _seed(G) -> tuple[Buffer, int]:
    """The seeds buffer of this graph (made by one extern call, before the first random kernel) and
    the next index into it."""
    st = getattr(G, "fx_seeds", None)
    if st is None:
        count = sum(n.op == "call_function" and n.target in RANDOM_OPS for n in G.gm.graph.nodes)
        name = G.name("seeds")
        buf = Buffer(name, (count,), (1,), torch.int64, G.device, None, kind="extern")
        scratch = torch.fx.Graph()  # an FX node for the wrapper and the IR dump; not in the graph
        fxnode = scratch.call_function(prims.inductor_seeds.default, (count, G.device))
        G.items.append(Extern(name, fxnode, (count, G.device), {}, [buf], False))
        st = G.fx_seeds = [buf, 0]
    st[1] += 1
    return st[0], st[1] - 1


def _random(G, node, meta, mode: str) -> Pointwise | None:
    if config.fallback_random() or not meta.dtype.is_floating_point:
        return None
    seeds, i = _seed(G)
    shape, dt = shape_of(meta), meta.dtype
    strides = contiguous_strides(shape)

    def fn(ctx, idx):
        ctx.helpers["_fx_philox"] = PHILOX_SOURCE
        seed = seeds.load(ctx, [str(i)])
        off = ctx.index_tensor(linear(idx, strides))
        return ctx.cast(ctx.op(f"_fx_{mode}({seed}, {off})"), torch.float32, dt)

    return Pointwise(fn, shape, dt, meta.device, node)


@register(aten.rand.default, aten.randn.default)
def _rand(G, node, meta, size, *, generator=None, **kwargs):
    return None if generator is not None else _random(G, node, meta, RANDOM_OPS[node.target])


@register(aten.rand_like.default, aten.randn_like.default)
def _rand_like(G, node, meta, x, **kwargs):
    return _random(G, node, meta, RANDOM_OPS[node.target])


@register(aten.bernoulli.default, aten.bernoulli.p)
def _bernoulli(G, node, meta, x, p=None, *, generator=None):
    """bernoulli(x) draws 1 with probability x (or p): rand < probability."""
    if generator is not None or not meta.dtype.is_floating_point:
        return None
    prob = G.use(x, node) if p is None and isinstance(x, Value) else p
    if prob is None:
        return None
    u = _random(G, None, meta, "rand")
    if u is None:
        return None
    shape, dt = shape_of(meta), meta.dtype

    def fn(ctx, idx):
        r = u.load(ctx, idx)
        if isinstance(prob, Value):
            pv = ctx.cast(prob.load(ctx, broadcast_index(idx, prob.shape, shape)), prob.dtype, torch.float32)
        else:
            pv = repr(float(prob))
        return ctx.cast(ctx.op(f"({r} < {pv})"), torch.bool, dt)

    return Pointwise(fn, shape, dt, meta.device, node)


@register(aten.empty.memory_format, aten.empty_permuted.default)
def _empty(G, node, meta, *args, **kwargs):
    """Uninitialized memory may hold anything: zeros, never stored (dropout2d and alpha_dropout
    decompose to `empty(...).bernoulli_(p)`, which overwrites it)."""
    shape, dt = shape_of(meta), meta.dtype
    return Pointwise(lambda ctx, idx: ctx.full(0, dt), shape, dt, meta.device, node, cheap=True)
