"""2-D pooling as pointwise kernels with the window loop unrolled (as inductor does).

Forward ops compute each output element from its window; backward ops are gathers: each input
element sums the gradients of the (few) output windows that contain it, so no scatter and no atomics.
Windows larger than `MAX_WINDOW` elements stay ATen calls (unrolled code would be too long).
All index arithmetic works on non-negative numbers only: `//` truncates in C (Triton on the GPU)
but floors in numpy (the interpreter), and both agree there.
"""

from __future__ import annotations

import math

import torch

from fxlens.backend.ir import Pointwise, Value
from fxlens.backend.lower.core import register, shape_of

aten = torch.ops.aten
MAX_WINDOW = 64


def _pair(v, default=None):
    if v is None or (isinstance(v, (list, tuple)) and len(v) == 0):
        v = default
    if isinstance(v, int):
        return v, v
    return (v[0], v[0]) if len(v) == 1 else (int(v[0]), int(v[1]))


def clamp_index(e: str, hi: int) -> str:
    return f"tl.minimum(tl.maximum({e}, 0), {hi})"


def _ok(x, kernel) -> bool:
    return (isinstance(x, Value) and x.dtype.is_floating_point and len(x.shape) in (3, 4)
            and kernel[0] * kernel[1] <= MAX_WINDOW)  # fmt: skip


# --- max pooling --------------------------------------------------------------------------------
@register(aten.max_pool2d_with_indices.default)
def _max_pool(G, node, meta, x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    k, s = _pair(kernel_size), _pair(stride, kernel_size)
    p, d = _pair(padding), _pair(dilation)
    if not _ok(x, k):
        return None
    x = G.use(x, node)
    H, W = x.shape[-2:]
    shape = shape_of(meta[0])

    def scan(ctx, idx, want_index):
        """Running max (and its flat index): NaN wins and the last NaN's index is kept, ties keep the
        first (torch's CPU loop: `val > maxval || isnan(val)`)."""
        best, bidx = ctx.full(float("-inf"), torch.float32), ctx.full(-1, torch.int64)
        for i in range(k[0]):
            for j in range(k[1]):
                h = f"({idx[-2]} * {s[0]} + {i * d[0] - p[0]})"
                w = f"({idx[-1]} * {s[1]} + {j * d[1] - p[1]})"
                valid = ctx.op(f"({h} >= 0) & ({h} < {H}) & ({w} >= 0) & ({w} < {W})")
                v = ctx.cast(
                    x.load(ctx, [*idx[:-2], clamp_index(h, H - 1), clamp_index(w, W - 1)]), x.dtype, torch.float32
                )
                first = f" | ({bidx} < 0)" if want_index else ""
                take = ctx.op(f"{valid} & (({v} > {best}) | ({v} != {v}){first})")
                best = ctx.op(f"tl.where({take}, {v}, {best})")
                if want_index:
                    bidx = ctx.op(f"tl.where({take}, {h} * {W} + {w}, {bidx})")
        return best, bidx

    def values(ctx, idx):
        return ctx.cast(scan(ctx, idx, False)[0], torch.float32, meta[0].dtype)

    def indices(ctx, idx):
        return ctx.cast(scan(ctx, idx, True)[1], torch.int64, meta[1].dtype)

    out = Pointwise(values, shape, meta[0].dtype, meta[0].device, node)
    out.item = 0
    ind = Pointwise(indices, shape, meta[1].dtype, meta[1].device, node)
    ind.item = 1
    return out, ind


def _candidates(ctx, i: str, pad: int, stride: int, count: int, n_out: int):
    """Output positions whose windows may contain input position `i`: floor((i + pad) / stride) - a
    for a < count, each with whether it exists, clamped for loading."""
    top = f"(({i} + {pad}) // {stride})"
    out = []
    for a in range(count):
        o = f"({top} - {a})"
        out.append((o, f"({o} >= 0) & ({o} < {n_out})", clamp_index(o, n_out - 1)))
    return out


@register(aten.max_pool2d_with_indices_backward.default)
def _max_pool_backward(G, node, meta, grad, x, kernel_size, stride, padding, dilation, ceil_mode, indices):
    k, s = _pair(kernel_size), _pair(stride, kernel_size)
    p, d = _pair(padding), _pair(dilation)
    if not _ok(x, k) or not isinstance(grad, Value) or not isinstance(indices, Value):
        return None
    grad, indices = G.use(grad, node), G.use(indices, node)
    OH, OW = grad.shape[-2:]
    W = x.shape[-1]
    ch = ((k[0] - 1) * d[0]) // s[0] + 1
    cw = ((k[1] - 1) * d[1]) // s[1] + 1
    dt = meta.dtype

    def fn(ctx, idx):
        flat = f"({idx[-2]} * {W} + {idx[-1]})"
        acc = ctx.full(0.0, torch.float32)
        for _oh, vh, lh in _candidates(ctx, idx[-2], p[0], s[0], ch, OH):
            for _ow, vw, lw in _candidates(ctx, idx[-1], p[1], s[1], cw, OW):
                at = [*idx[:-2], lh, lw]
                hit = ctx.op(f"{vh} & {vw} & ({indices.load(ctx, at)} == {flat})")
                g = ctx.cast(grad.load(ctx, at), grad.dtype, torch.float32)
                acc = ctx.op(f"{acc} + tl.where({hit}, {g}, 0.0)")
        return ctx.cast(acc, torch.float32, dt)

    return Pointwise(fn, shape_of(meta), dt, meta.device, node)


# --- average pooling ----------------------------------------------------------------------------
def _avg_window(o: str, stride: int, pad: int, size: int, kernel: int):
    """(start, end) clipped to the input, and the padded window length, of output position `o`
    (torch's avg_pool2d: the window may run into the padding but not past it)."""
    start = f"({o} * {stride} - {pad})"
    end = f"tl.minimum({start} + {kernel}, {size + pad})"
    return f"tl.maximum({start}, 0)", f"tl.minimum({end}, {size})", f"({end} - {start})"


def _divisor(ctx, oh, ow, k, s, p, H, W, count_include_pad, divisor_override):
    if divisor_override:
        return str(float(divisor_override))
    h0, h1, hp = _avg_window(oh, s[0], p[0], H, k[0])
    w0, w1, wp = _avg_window(ow, s[1], p[1], W, k[1])
    n = f"({hp} * {wp})" if count_include_pad else f"(({h1} - {h0}) * ({w1} - {w0}))"
    return ctx.op(f"{n}.to(tl.float32)")


@register(aten.avg_pool2d.default)
def _avg_pool(G, node, meta, x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
              divisor_override=None):  # fmt: skip
    k, s, p = _pair(kernel_size), _pair(stride, kernel_size), _pair(padding)
    if not _ok(x, k):
        return None
    x = G.use(x, node)
    H, W = x.shape[-2:]
    dt = meta.dtype

    def fn(ctx, idx):
        oh, ow = idx[-2], idx[-1]
        acc = ctx.full(0.0, torch.float32)
        for i in range(k[0]):
            for j in range(k[1]):
                h, w = f"({oh} * {s[0]} + {i - p[0]})", f"({ow} * {s[1]} + {j - p[1]})"
                valid = ctx.op(f"({h} >= 0) & ({h} < {H}) & ({w} >= 0) & ({w} < {W})")
                v = ctx.cast(
                    x.load(ctx, [*idx[:-2], clamp_index(h, H - 1), clamp_index(w, W - 1)]), x.dtype, torch.float32
                )
                acc = ctx.op(f"{acc} + tl.where({valid}, {v}, 0.0)")
        div = _divisor(ctx, oh, ow, k, s, p, H, W, count_include_pad, divisor_override)
        return ctx.cast(ctx.op(f"{acc} / {div}"), torch.float32, dt)

    return Pointwise(fn, shape_of(meta), dt, meta.device, node)


@register(aten.avg_pool2d_backward.default)
def _avg_pool_backward(G, node, meta, grad, x, kernel_size, stride, padding, ceil_mode, count_include_pad,
                       divisor_override):  # fmt: skip
    k, s, p = _pair(kernel_size), _pair(stride, kernel_size), _pair(padding)
    if not _ok(x, k) or not isinstance(grad, Value):
        return None
    grad = G.use(grad, node)
    H, W = x.shape[-2:]
    OH, OW = grad.shape[-2:]
    dt = meta.dtype

    def fn(ctx, idx):
        acc = ctx.full(0.0, torch.float32)
        for oh, vh, lh in _candidates(ctx, idx[-2], p[0], s[0], math.ceil(k[0] / s[0]), OH):
            for ow, vw, lw in _candidates(ctx, idx[-1], p[1], s[1], math.ceil(k[1] / s[1]), OW):
                # the window of (oh, ow) starts at o * stride - pad and holds `kernel` elements
                inside = (f"({idx[-2]} + {p[0]} < {oh} * {s[0]} + {k[0]})"
                          f" & ({idx[-1]} + {p[1]} < {ow} * {s[1]} + {k[1]})")  # fmt: skip
                hit = ctx.op(f"{vh} & {vw} & {inside}")
                g = ctx.cast(grad.load(ctx, [*idx[:-2], lh, lw]), grad.dtype, torch.float32)
                div = _divisor(ctx, lh, lw, k, s, p, H, W, count_include_pad, divisor_override)
                acc = ctx.op(f"{acc} + tl.where({hit}, {g} / {div}, 0.0)")
        return ctx.cast(acc, torch.float32, dt)

    return Pointwise(fn, shape_of(meta), dt, meta.device, node)


# --- adaptive average pooling -------------------------------------------------------------------
def adaptive_bounds(o: str, size: int, n_out: int):
    """torch's adaptive window of output `o`: [floor(o*size/n_out), ceil((o+1)*size/n_out))."""
    return f"(({o} * {size}) // {n_out})", f"((({o} + 1) * {size} + {n_out - 1}) // {n_out})"


def max_span(size: int, n_out: int) -> int:
    return max(-(-(o + 1) * size // n_out) - (o * size) // n_out for o in range(n_out))


def adaptive_window(ctx, idx, x: Value, out: tuple[int, int], spans: tuple[int, int]):
    """(h, w, valid, value as fp32) of each place of output IDX's 2-D adaptive window over X, at
    most SPANS rows and columns; `valid` is False past the window's end (the load is clamped)."""
    (H, W), (OH, OW) = x.shape[-2:], out
    h0, h1 = adaptive_bounds(idx[-2], H, OH)
    w0, w1 = adaptive_bounds(idx[-1], W, OW)
    for i in range(spans[0]):
        for j in range(spans[1]):
            h, w = f"({h0} + {i})", f"({w0} + {j})"
            valid = ctx.op(f"({h} < {h1}) & ({w} < {w1})")
            v = x.load(ctx, [*idx[:-2], clamp_index(h, H - 1), clamp_index(w, W - 1)])
            yield h, w, valid, ctx.cast(v, x.dtype, torch.float32)


@register(aten._adaptive_avg_pool2d.default)
def _adaptive_avg_pool(G, node, meta, x, output_size):
    if not isinstance(x, Value) or len(x.shape) not in (3, 4):
        return None
    H, W = x.shape[-2:]
    OH, OW = shape_of(meta)[-2:]
    kh, kw = max_span(H, OH), max_span(W, OW)
    if not _ok(x, (kh, kw)):
        return None
    x = G.use(x, node)
    dt = meta.dtype

    def fn(ctx, idx):
        h0, h1 = adaptive_bounds(idx[-2], H, OH)
        w0, w1 = adaptive_bounds(idx[-1], W, OW)
        acc = ctx.full(0.0, torch.float32)
        for _, _, valid, v in adaptive_window(ctx, idx, x, (OH, OW), (kh, kw)):
            acc = ctx.op(f"{acc} + tl.where({valid}, {v}, 0.0)")
        n = ctx.op(f"(({h1} - {h0}) * ({w1} - {w0})).to(tl.float32)")
        return ctx.cast(ctx.op(f"{acc} / {n}"), torch.float32, dt)

    return Pointwise(fn, shape_of(meta), dt, meta.device, node)


def _max_cover(size: int, n_out: int) -> int:
    """The most adaptive windows one input position lies in."""
    cover = [0] * size
    for o in range(n_out):
        lo, hi = (o * size) // n_out, -(-(o + 1) * size // n_out)
        for i in range(lo, hi):
            cover[i] += 1
    return max(cover)


@register(aten._adaptive_avg_pool2d_backward.default)
def _adaptive_avg_pool_backward(G, node, meta, grad, x):
    if not isinstance(grad, Value) or not isinstance(x, Value) or len(x.shape) not in (3, 4):
        return None
    H, W = x.shape[-2:]
    OH, OW = grad.shape[-2:]
    ch, cw = _max_cover(H, OH), _max_cover(W, OW)
    if not _ok(x, (ch, cw)):
        return None
    grad = G.use(grad, node)
    dt = meta.dtype

    def fn(ctx, idx):
        acc = ctx.full(0.0, torch.float32)
        # windows holding input i are consecutive and end with the last one starting at or before i:
        # ceil((i + 1) * n_out / size) - 1 (window o starts at floor(o * size / n_out))
        for a in range(ch):
            oh = f"((({idx[-2]} + 1) * {OH} + {H - 1}) // {H} - {1 + a})"
            for b in range(cw):
                ow = f"((({idx[-1]} + 1) * {OW} + {W - 1}) // {W} - {1 + b})"
                lh, lw = clamp_index(oh, OH - 1), clamp_index(ow, OW - 1)
                h0, h1 = adaptive_bounds(lh, H, OH)
                w0, w1 = adaptive_bounds(lw, W, OW)
                hit = ctx.op(f"({oh} >= 0) & ({ow} >= 0) & ({idx[-2]} >= {h0}) & ({idx[-2]} < {h1})"
                             f" & ({idx[-1]} >= {w0}) & ({idx[-1]} < {w1})")  # fmt: skip
                g = ctx.cast(grad.load(ctx, [*idx[:-2], lh, lw]), grad.dtype, torch.float32)
                n = ctx.op(f"(({h1} - {h0}) * ({w1} - {w0})).to(tl.float32)")
                acc = ctx.op(f"{acc} + tl.where({hit}, {g} / {n}, 0.0)")
        return ctx.cast(acc, torch.float32, dt)

    return Pointwise(fn, shape_of(meta), dt, meta.device, node)
