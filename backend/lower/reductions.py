"""Reductions: sum, prod, mean, amax/amin, argmax/argmin, max/min with indices, any, and var/var_mean
(two passes over the row).
"""

from __future__ import annotations

import torch

from fxlens.backend.ir import Pointwise, Reduction, Value, compute_dtype, numel, reciprocal
from fxlens.backend.lower.core import MetaLike, normalize_dims, reduction, register, shape_of

aten = torch.ops.aten


@register(aten.sum.dim_IntList, aten.sum.default)
def _sum(G, node, meta, x, dims=None, keepdim=False, dtype=None):
    return reduction(G, node, meta, x, dims, "sum", keepdim, src_dtype=dtype)


@register(aten.prod.default, aten.prod.dim_int)
def _prod(G, node, meta, x, dim=None, keepdim=False, dtype=None):
    return reduction(G, node, meta, x, dim, "prod", keepdim, src_dtype=dtype)


@register(aten.mean.dim, aten.mean.default)
def _mean(G, node, meta, x, dims=None, keepdim=False, dtype=None):
    if not meta.dtype.is_floating_point or not isinstance(x, Value):
        return None
    rd = normalize_dims(dims, len(x.shape))
    n = numel([x.shape[d] for d in rd]) if x.shape else 1
    return reduction(G, node, meta, x, dims, "sum", keepdim, scale=reciprocal(n, 1.0), src_dtype=dtype)


@register(aten.amax.default, aten.amin.default, aten.max.default, aten.min.default)
def _amax(G, node, meta, x, dims=None, keepdim=False):
    rtype = "max" if node.target in (aten.amax.default, aten.max.default) else "min"
    return reduction(G, node, meta, x, dims, rtype, keepdim)


@register(aten.argmax.default, aten.argmin.default)
def _argmax(G, node, meta, x, dim=None, keepdim=False):
    rtype = "argmax" if node.target == aten.argmax.default else "argmin"
    if dim is None and keepdim:
        return None
    return reduction(G, node, meta, x, dim, rtype, keepdim)


@register(aten.max.dim, aten.min.dim)
def _max_dim(G, node, meta, x, dim, keepdim=False):
    kind = "max" if node.target == aten.max.dim else "min"
    v = reduction(G, node, meta[0], x, dim, kind, keepdim, item=0)
    i = reduction(G, node, meta[1], x, dim, "arg" + kind, keepdim, item=1)
    return None if v is None or i is None else (v, i)


@register(aten.any.dim, aten.any.dims, aten.any.default)
def _any(G, node, meta, x, dims=None, keepdim=False):
    return reduction(G, node, meta, x, dims, "any", keepdim)


@register(aten.var_mean.correction, aten.var.correction)
def _var_mean(G, node, meta, x, dims=None, *, correction=None, keepdim=False):
    """Two-pass variance: mean = sum(x)/N, then var = sum((x - mean)^2)/(N - correction)."""
    both = node.target == aten.var_mean.correction
    vmeta, mmeta = (meta[0], meta[1]) if both else (meta, meta)
    if not isinstance(x, Value) or not x.dtype.is_floating_point or numel(x.shape) == 0:
        return None  # (an empty input: ATen's NaNs; `reduction` declines empty inputs too)
    x = G.use(x, node)
    rd = normalize_dims(dims, len(x.shape))
    n = numel([x.shape[d] for d in rd])
    corr = 1 if correction is None else correction
    corr = int(corr) if float(corr).is_integer() else corr  # 1.0 from the decomposition: keep n - corr an int
    mean = reduction(G, node, MetaLike(_keep(x.shape, rd), mmeta.dtype, x.device), x, rd, "sum", True,
                     item=1 if both else None, scale=reciprocal(n, 1.0))  # fmt: skip
    full = x.shape

    def sq(ctx, idx):
        v = ctx.cast(x.load(ctx, idx), x.dtype, torch.float32 if x.dtype != torch.float64 else x.dtype)
        m = mean.load(ctx, ["0" if d in rd else i for d, i in enumerate(idx)])
        d = ctx.op(f"{v} - {m}")
        return ctx.op(f"{d} * {d}")

    src = Pointwise(sq, full, compute_dtype(x.dtype), x.device, None)
    var = G.realize(Reduction(src, "sum", rd, keepdim, shape_of(vmeta), vmeta.dtype, x.device, node,
                              0 if both else None, reciprocal(n - corr)))  # fmt: skip
    if not both:
        return var
    return var, (mean if keepdim else G.view_as(mean, shape_of(mmeta), node, 1))


def _keep(shape, rd):
    return tuple(1 if d in rd else s for d, s in enumerate(shape))
