"""More pooling forward ops, in lower/pool.py's style (the window loop unrolled in a pointwise kernel,
non-negative index arithmetic only): avg_pool3d, _adaptive_avg_pool3d, and adaptive_max_pool2d
(values and flat indices; NaN wins and the last NaN's index is kept, ties keep the first, as in
torch's CPU loop). Windows over lower/pool.py's element limit stay ATen calls; so do backward ops."""

from __future__ import annotations

import itertools

import torch

from fxlens.backend.ir import Pointwise, Value
from fxlens.backend.lower.core import register, shape_of
from fxlens.backend.lower.pool import MAX_WINDOW, adaptive_bounds, adaptive_window, clamp_index, max_span

aten = torch.ops.aten


def _triple(v, default=None):
    if v is None or (isinstance(v, (list, tuple)) and len(v) == 0):
        v = default
    if isinstance(v, int):
        return (v,) * 3
    return tuple(int(a) for a in v) * (3 if len(v) == 1 else 1)


def _window_ok(x, ndim: int, window) -> bool:
    return (isinstance(x, Value) and x.dtype.is_floating_point and len(x.shape) in (ndim + 1, ndim + 2)
            and all(w > 0 for w in window) and _prod(window) <= MAX_WINDOW)  # fmt: skip


def _prod(xs) -> int:
    out = 1
    for v in xs:
        out *= v
    return out


@register(aten.avg_pool3d.default)
def _avg_pool3d(G, node, meta, x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                divisor_override=None):  # fmt: skip
    k, s, p = _triple(kernel_size), _triple(stride, kernel_size), _triple(padding)
    if not _window_ok(x, 3, k):
        return None
    x = G.use(x, node)
    size = x.shape[-3:]
    dt = meta.dtype

    def fn(ctx, idx):
        o = idx[-3:]
        acc = ctx.full(0.0, torch.float32)
        for off in itertools.product(*(range(n) for n in k)):
            pos = [f"({o[a]} * {s[a]} + {off[a] - p[a]})" for a in range(3)]
            valid = ctx.op(" & ".join(f"({q} >= 0) & ({q} < {size[a]})" for a, q in enumerate(pos)))
            at = [*idx[:-3], *(clamp_index(q, size[a] - 1) for a, q in enumerate(pos))]
            v = ctx.cast(x.load(ctx, at), x.dtype, torch.float32)
            acc = ctx.op(f"{acc} + tl.where({valid}, {v}, 0.0)")
        if divisor_override:
            div = str(float(divisor_override))
        else:  # the window may run into the padding but not past it (torch's avg_pool3d)
            terms = []
            for a in range(3):
                start = f"({o[a]} * {s[a]} - {p[a]})"
                end = f"tl.minimum({start} + {k[a]}, {size[a] + p[a]})"
                n = f"({end} - {start})" if count_include_pad else (
                    f"(tl.minimum({end}, {size[a]}) - tl.maximum({start}, 0))")  # fmt: skip
                terms.append(n)
            div = ctx.op(f"({' * '.join(terms)}).to(tl.float32)")
        return ctx.cast(ctx.op(f"{acc} / {div}"), torch.float32, dt)

    return Pointwise(fn, shape_of(meta), dt, meta.device, node)


@register(aten._adaptive_avg_pool3d.default)
def _adaptive_avg_pool3d(G, node, meta, x, output_size):
    if not isinstance(x, Value) or len(x.shape) not in (4, 5):
        return None
    size, out = x.shape[-3:], shape_of(meta)[-3:]
    spans = [max_span(size[a], out[a]) for a in range(3)]
    if not _window_ok(x, 3, spans):
        return None
    x = G.use(x, node)
    dt = meta.dtype

    def fn(ctx, idx):
        bounds = [adaptive_bounds(idx[-3 + a], size[a], out[a]) for a in range(3)]
        acc = ctx.full(0.0, torch.float32)
        for off in itertools.product(*(range(n) for n in spans)):
            pos = [f"({bounds[a][0]} + {off[a]})" for a in range(3)]
            valid = ctx.op(" & ".join(f"({q} < {bounds[a][1]})" for a, q in enumerate(pos)))
            v = x.load(ctx, [*idx[:-3], *(clamp_index(q, size[a] - 1) for a, q in enumerate(pos))])
            acc = ctx.op(f"{acc} + tl.where({valid}, {ctx.cast(v, x.dtype, torch.float32)}, 0.0)")
        n = ctx.op(f"({' * '.join(f'({b1} - {b0})' for b0, b1 in bounds)}).to(tl.float32)")
        return ctx.cast(ctx.op(f"{acc} / {n}"), torch.float32, dt)

    return Pointwise(fn, shape_of(meta), dt, meta.device, node)


@register(aten.adaptive_max_pool2d.default)
def _adaptive_max_pool2d(G, node, meta, x, output_size):
    if not isinstance(x, Value) or len(x.shape) not in (3, 4):
        return None
    H, W = x.shape[-2:]
    OH, OW = shape_of(meta[0])[-2:]
    kh, kw = max_span(H, OH), max_span(W, OW)
    if not _window_ok(x, 2, (kh, kw)):
        return None
    x = G.use(x, node)

    def scan(ctx, idx):
        h0, _ = adaptive_bounds(idx[-2], H, OH)
        w0, _ = adaptive_bounds(idx[-1], W, OW)
        best, bidx = ctx.full(float("-inf"), torch.float32), ctx.op(f"({h0}) * {W} + {w0}")
        for h, w, valid, v in adaptive_window(ctx, idx, x, (OH, OW), (kh, kw)):
            take = ctx.op(f"{valid} & (({v} > {best}) | ({v} != {v}))")
            best = ctx.op(f"tl.where({take}, {v}, {best})")
            bidx = ctx.op(f"tl.where({take}, {h} * {W} + {w}, {bidx})")
        return best, bidx

    vals = Pointwise(lambda ctx, idx: ctx.cast(scan(ctx, idx)[0], torch.float32, meta[0].dtype),
                     shape_of(meta[0]), meta[0].dtype, meta[0].device, node)  # fmt: skip
    inds = Pointwise(lambda ctx, idx: ctx.cast(scan(ctx, idx)[1], torch.int64, meta[1].dtype),
                     shape_of(meta[1]), meta[1].dtype, meta[1].device, node)  # fmt: skip
    vals.item, inds.item = 0, 1
    return vals, inds
