"""ATen -> IR lowerings, as tables of `(op, action)`.

Each action gets the graph lowering `G`, the FX node, its output metadata (a fake tensor or a tuple of
them) and the node's arguments with tensors replaced by IR values. It returns an IR value (or tuple),
or None to let the op run as an ATen fallback. Ops missing here are fallbacks too, and are counted.
"""

from __future__ import annotations

import math

import sympy
import torch

from fxlens.backend.codegen import _lit
from fxlens.backend.ir import (
    TL_DTYPE,
    Pointwise,
    Reduction,
    Value,
    broadcast_index,
    compute_dtype,
    numel,
    reciprocal,
)
from fxlens.backend.symbolic import is_static, render, sizes

try:  # registers prims.fma, which Dynamo emits for addcmul_/lerp_ (optimizer steps)
    import torch._inductor.inductor_prims  # noqa: F401
except Exception:  # pragma: no cover - older torch
    pass

aten = torch.ops.aten
prims = torch.ops.prims
LOWERINGS: dict = {}


def register(*ops):
    def deco(fn):
        for op in ops:
            LOWERINGS[op] = fn
        return fn

    return deco


def _shape(meta) -> tuple:
    return sizes(meta.shape)


def pointwise(G, node, meta, inputs, fmt, compute=None, cheap=False, cast_result=True) -> Pointwise:
    """An elementwise op: inputs broadcast to `meta`'s shape, cast to `compute`, combined by `fmt`."""
    shape, out_dt = _shape(meta), meta.dtype
    cdt = compute or out_dt
    vals = [G.use(v, node) if isinstance(v, Value) else v for v in inputs]

    def fn(ctx, idx):
        args = []
        for v in vals:
            if isinstance(v, Value):
                var = v.load(ctx, broadcast_index(idx, v.shape, shape))
                args.append(ctx.cast(var, v.dtype, cdt))
            else:
                args.append(_lit(_wrapped(v, cdt)))
        if not any(isinstance(v, Value) for v in vals) and is_static(*vals):
            return ctx.full(eval(fmt(*args), {"float": float}), out_dt)  # noqa: S307
        res = ctx.op(fmt(*args))
        return ctx.cast(res, cdt, out_dt) if cast_result else res

    return Pointwise(fn, shape, out_dt, meta.device, node, cheap=cheap)


def _wrapped(v, dtype: torch.dtype):
    """An int scalar as eager casts it into an unsigned dtype (uint8 + -3 adds 253); Triton refuses
    negative scalars with unsigned tensors."""
    if dtype == torch.uint8 and isinstance(v, int) and not isinstance(v, bool) and is_static(v):
        return v % 256
    return v


def _promoted(*xs) -> torch.dtype:
    ms = [
        torch.empty([1] * bool(x.shape), dtype=x.dtype, device="meta") if isinstance(x, Value) else x
        for x in xs
    ]
    ms = [m if is_static(m) else 1 for m in ms]  # a symbolic size is an int
    return torch.result_type(*ms) if len(ms) == 2 else ms[0].dtype


_LOG1P = "tl.where(({u} == 1.0) | ({u} == float('inf')), {a}, tl.log({u}) * ({a} / ({u} - 1.0)))"
_EXPM1 = (
    "tl.where(({u} == 1.0) | ({u} == float('inf')), tl.where({u} == 1.0, {a}, {u}),"
    " tl.where({u} - 1.0 == -1.0, -1.0, ({u} - 1.0) * ({a} / tl.log({u}))))"
)

# (op, Triton expression over the cast inputs) -- computed in the output's compute dtype.
_ARITH = [
    (aten.neg.default, lambda a: f"-{a}"),
    (aten.abs.default, lambda a: f"tl.abs({a})"),
    (aten.exp.default, lambda a: f"tl.exp({a})"),
    (aten.exp2.default, lambda a: f"tl.exp2({a})"),
    (aten.log.default, lambda a: f"tl.log({a})"),
    (aten.log2.default, lambda a: f"tl.log2({a})"),
    # the interpreter has no log1p/expm1 (libdevice's on the GPU): Goldberg's and Kahan's exact-
    # rounding corrections, since log(1 + a) / exp(a) - 1 lose every digit of a tiny `a`
    (aten.log1p.default, lambda a: _LOG1P.format(a=a, u=f"(1.0 + {a})")),
    (aten.expm1.default, lambda a: _EXPM1.format(a=a, u=f"tl.exp({a})")),
    (aten.sqrt.default, lambda a: f"tl.sqrt({a})"),
    (aten.rsqrt.default, lambda a: f"tl.rsqrt({a})"),
    (aten.sin.default, lambda a: f"tl.sin({a})"),
    (aten.cos.default, lambda a: f"tl.cos({a})"),
    (aten.tanh.default, lambda a: f"(2.0 / (1.0 + tl.exp(-2.0 * {a})) - 1.0)"),  # no libdevice on CPU
    (aten.sigmoid.default, lambda a: f"(1.0 / (1.0 + tl.exp(-{a})))"),  # tl.sigmoid is a stdlib @jit
    (aten.erf.default, lambda a: f"tl.math.erf({a})"),
    (aten.reciprocal.default, lambda a: f"(1.0 / {a})"),
    # torch's max/min/relu/clamp propagate NaN; Triton's default (NONE) would drop it on the GPU
    (aten.relu.default, lambda a: f"tl.maximum({a}, 0, propagate_nan=tl.PropagateNan.ALL)"),
    (aten.floor.default, lambda a: f"tl.floor({a})"),
    (aten.ceil.default, lambda a: f"tl.ceil({a})"),
    (aten.trunc.default, lambda a: f"tl.where({a} < 0, tl.ceil({a}), tl.floor({a}))"),
    (aten.mul.Tensor, lambda a, b: f"{a} * {b}"),
    (aten.mul.Scalar, lambda a, b: f"{a} * {b}"),
    (aten.div.Tensor, lambda a, b: f"{a} / {b}"),
    (aten.true_divide.Tensor, lambda a, b: f"{a} / {b}"),  # div.Tensor's alias (sizes as tensors)
    (aten.div.Scalar, lambda a, b: f"{a} / {b}"),
    (aten.maximum.default, lambda a, b: f"tl.maximum({a}, {b}, propagate_nan=tl.PropagateNan.ALL)"),
    (aten.minimum.default, lambda a, b: f"tl.minimum({a}, {b}, propagate_nan=tl.PropagateNan.ALL)"),
    (aten.bitwise_and.Tensor, lambda a, b: f"{a} & {b}"),
    (aten.bitwise_or.Tensor, lambda a, b: f"{a} | {b}"),
    (aten.bitwise_xor.Tensor, lambda a, b: f"{a} ^ {b}"),
    (aten.logical_and.default, lambda a, b: f"({a} != 0) & ({b} != 0)"),
    (aten.logical_or.default, lambda a, b: f"({a} != 0) | ({b} != 0)"),
    (aten.logical_xor.default, lambda a, b: f"({a} != 0) ^ ({b} != 0)"),
    (aten.logical_not.default, lambda a: f"({a} == 0)"),
    (aten.sign.default, lambda a: f"(({a} > 0).to(tl.float32) - ({a} < 0).to(tl.float32))"),
]
if hasattr(prims, "fma"):
    _ARITH.append((prims.fma.default, lambda a, b, c: f"{a} * {b} + {c}"))
_FLOAT_ONLY = {
    aten.exp.default, aten.exp2.default, aten.log.default, aten.log2.default, aten.log1p.default,
    aten.expm1.default, aten.sqrt.default, aten.rsqrt.default, aten.sin.default, aten.cos.default,
    aten.tanh.default, aten.sigmoid.default, aten.erf.default, aten.reciprocal.default,
    aten.floor.default, aten.ceil.default, aten.trunc.default,
}  # fmt: skip


# On the GPU these use libdevice's correctly rounded forms; the interpreter cannot run libdevice
# (extern_elementwise, TRITON-NOTES.md), so CPU kernels keep the composite forms above.
_LIBDEVICE = {aten.tanh.default: "tanh", aten.log1p.default: "log1p", aten.expm1.default: "expm1"}


def libdevice_form(device: torch.device, name: str, nargs: int = 1):
    """`libdevice.name(...)` as an expression maker when compiling for CUDA, else None."""
    if device.type != "cuda":
        return None
    return lambda *xs: f"libdevice.{name}({', '.join(xs[:nargs])})"


def _arith(op, fmt):
    def lower(G, node, meta, *args, **kwargs):
        if kwargs or (op in _FLOAT_ONLY and not meta.dtype.is_floating_point):
            return None
        gpu = libdevice_form(meta.device, _LIBDEVICE[op]) if op in _LIBDEVICE else None
        if gpu is not None:
            return pointwise(G, node, meta, args, gpu)
        if op == aten.sign.default:
            return pointwise(G, node, meta, args, lambda a: f"{fmt(a)}.to({_tl(meta.dtype)})")
        return pointwise(G, node, meta, args, fmt)

    return lower


def _tl(dt):
    from fxlens.backend.ir import TL_DTYPE

    return TL_DTYPE[compute_dtype(dt)]


for _op, _fmt in _ARITH:
    LOWERINGS[_op] = _arith(_op, _fmt)

_BITWISE_NOT = aten.bitwise_not.default


@register(_BITWISE_NOT)
def _bitwise_not(G, node, meta, a):
    return pointwise(
        G, node, meta, [a], (lambda x: f"({x} == 0)") if meta.dtype == torch.bool else (lambda x: f"~{x}")
    )


@register(aten.add.Tensor, aten.add.Scalar, aten.sub.Tensor, aten.sub.Scalar)
def _add_sub(G, node, meta, a, b, alpha=1):
    sign = "+" if node.target in (aten.add.Tensor, aten.add.Scalar) else "-"
    if meta.dtype == torch.bool:
        return None
    tail = "" if alpha == 1 else f" * {_lit(_wrapped(alpha, meta.dtype))}"
    return pointwise(G, node, meta, [a, b], lambda x, y: f"{x} {sign} {y}{tail}")


# div with rounding_mode, floor_divide, remainder, fmod: lower/division.py


_CMP = {
    aten.eq.Tensor: "==", aten.eq.Scalar: "==", aten.ne.Tensor: "!=", aten.ne.Scalar: "!=",
    aten.lt.Tensor: "<", aten.lt.Scalar: "<", aten.le.Tensor: "<=", aten.le.Scalar: "<=",
    aten.gt.Tensor: ">", aten.gt.Scalar: ">", aten.ge.Tensor: ">=", aten.ge.Scalar: ">=",
}  # fmt: skip


def _cmp(G, node, meta, a, b):
    op = _CMP[node.target]
    return pointwise(
        G, node, meta, [a, b], lambda x, y: f"({x} {op} {y})", compute=_promoted(a, b), cast_result=False
    )


for _op in _CMP:
    LOWERINGS[_op] = _cmp


@register(aten.isnan.default)
def _isnan(G, node, meta, a):
    return pointwise(G, node, meta, [a], lambda x: f"({x} != {x})", compute=a.dtype, cast_result=False)


@register(aten.isinf.default)
def _isinf(G, node, meta, a):
    return pointwise(
        G, node, meta, [a], lambda x: f"(tl.abs({x}) == float('inf'))", compute=a.dtype, cast_result=False
    )


@register(aten.pow.Tensor_Scalar)
def _pow(G, node, meta, a, e):
    if not meta.dtype.is_floating_point:
        return None
    table = {2: lambda x: f"{x} * {x}", 3: lambda x: f"{x} * {x} * {x}", 1: lambda x: x,
             0.5: lambda x: f"tl.sqrt({x})", -0.5: lambda x: f"tl.rsqrt({x})",
             -1: lambda x: f"(1.0 / {x})", -2: lambda x: f"(1.0 / ({x} * {x}))",
             0: lambda x: f"({x} * 0.0 + 1.0)"}  # fmt: skip
    if e in table:
        return pointwise(G, node, meta, [a], table[e])
    gpu = libdevice_form(meta.device, "pow", 2)
    if gpu is not None:  # handles negative bases and integer exponents exactly
        return pointwise(G, node, meta, [a, float(e)], gpu)
    if float(e).is_integer():
        return None  # negative bases with integer exponents: leave to ATen
    return pointwise(G, node, meta, [a], lambda x: f"tl.exp2({_lit(float(e))} * tl.log2({x}))")


@register(aten.pow.Scalar)
def _pow_scalar(G, node, meta, base, e):
    if not isinstance(base, (int, float)) or base <= 0 or not meta.dtype.is_floating_point:
        return None
    return pointwise(G, node, meta, [e], lambda x: f"tl.exp2({x} * {_lit(math.log2(base))})")


@register(aten.clamp.default, aten.clamp_min.default, aten.clamp_max.default)
def _clamp(G, node, meta, a, lo=None, hi=None):
    if node.target == aten.clamp_max.default:
        lo, hi = None, lo

    def fmt(x):
        if lo is not None:
            x = f"tl.maximum({x}, {_lit(lo)}, propagate_nan=tl.PropagateNan.ALL)"
        if hi is not None:
            x = f"tl.minimum({x}, {_lit(hi)}, propagate_nan=tl.PropagateNan.ALL)"
        return x

    return pointwise(G, node, meta, [a], fmt)


@register(aten.clamp.Tensor)
def _clamp_tensor(G, node, meta, a, lo=None, hi=None):
    # tensor bounds (F.cosine_similarity clamps its norms by a 0-d eps tensor); NaN anywhere is NaN
    nan = "propagate_nan=tl.PropagateNan.ALL"

    def fmt(x, *bounds):
        it = iter(bounds)
        if lo is not None:
            x = f"tl.maximum({x}, {next(it)}, {nan})"
        if hi is not None:
            x = f"tl.minimum({x}, {next(it)}, {nan})"
        return x

    return pointwise(
        G, node, meta, [a] + [b for b in (lo, hi) if b is not None], fmt, compute=compute_dtype(meta.dtype)
    )


@register(aten.where.self)
def _where(G, node, meta, c, a, b):
    cv = G.use(c, node) if isinstance(c, Value) else c
    shape, dt = _shape(meta), meta.dtype
    vals = [G.use(v, node) if isinstance(v, Value) else v for v in (a, b)]

    def fn(ctx, idx):
        cond = cv.load(ctx, broadcast_index(idx, cv.shape, shape)) if isinstance(cv, Value) else _lit(cv)
        if isinstance(cv, Value) and cv.dtype != torch.bool:
            cond = ctx.op(f"{cond} != 0")
        xs = []
        for v in vals:
            if isinstance(v, Value):
                xs.append(ctx.cast(v.load(ctx, broadcast_index(idx, v.shape, shape)), v.dtype, dt))
            else:
                xs.append(ctx.full(v, dt))
        return ctx.op(f"tl.where({cond}, {xs[0]}, {xs[1]})")

    return Pointwise(fn, shape, dt, meta.device, node)


def _cast(G, node, meta, a):
    if not isinstance(a, Value):
        return None
    return pointwise(G, node, meta, [a], lambda x: x, compute=a.dtype)


@register(aten._to_copy.default)
def _to_copy(G, node, meta, a, **kwargs):
    if meta.device != a.device:
        return None
    return _cast(G, node, meta, a)


@register(prims.convert_element_type.default)
def _convert(G, node, meta, a, dtype):
    return _cast(G, node, meta, a)


@register(aten.clone.default, aten.lift_fresh_copy.default)
def _clone(G, node, meta, a, **kwargs):
    return _cast(G, node, meta, a)


@register(aten.alias.default, aten.detach.default)
def _alias(G, node, meta, a):
    return G._relabel(a, node)


@register(aten.copy.default)
def _copy(G, node, meta, dst, src, non_blocking=False):
    if not isinstance(src, Value):
        return None
    return pointwise(G, node, meta, [src], lambda x: x, compute=src.dtype)


# --- constants and iota -------------------------------------------------------------------------
@register(aten.full.default, aten.full_like.default, aten.scalar_tensor.default, aten.zeros_like.default,
          aten.ones_like.default, aten.zeros.default, aten.ones.default, aten.empty_like.default)  # fmt: skip
def _full(G, node, meta, *args, **kwargs):
    t = node.target
    if t in (aten.full.default, aten.full_like.default):
        v = args[1]
    elif t == aten.scalar_tensor.default:
        v = args[0]
    else:
        v = 1 if t in (aten.ones.default, aten.ones_like.default) else 0
    shape, dt = _shape(meta), meta.dtype
    if isinstance(v, sympy.Expr) and v.is_integer and dt != torch.bool:
        # a size as a value (dynamic=True: scalar_tensor(s0) in group norm's backward): the kernel
        # takes the size symbol as an argument; adding it to zeros of the dtype converts it
        def sym(ctx, idx):
            return ctx.op(f"({render(v)} + tl.full({ctx.block()}, 0, {TL_DTYPE[compute_dtype(dt)]}))")

        return Pointwise(sym, shape, dt, meta.device, node, cheap=True)
    if not isinstance(v, (int, float, bool)):
        return None
    return Pointwise(lambda ctx, idx: ctx.full(v, dt), shape, dt, meta.device, node, cheap=True)


@register(aten.arange.start_step, aten.arange.start, aten.arange.default)
def _arange(G, node, meta, *args, **kwargs):
    nums = [a for a in args if isinstance(a, (int, float)) or not is_static(a)]
    start, step = (0, 1) if len(nums) == 1 else (nums[0], nums[2] if len(nums) > 2 else 1)
    return _iota(meta, node, start, step)


@register(prims.iota.default)
def _prims_iota(G, node, meta, length, *, start, step, dtype, device, requires_grad):
    return _iota(meta, node, start, step)


def _iota(meta, node, start, step):
    dt = meta.dtype

    def fn(ctx, idx):
        i = ctx.index_tensor(idx[0], torch.int64)
        wide = torch.float64 if dt.is_floating_point else torch.int64
        if dt.is_floating_point:
            i = ctx.cast(i, torch.int64, torch.float64)
        return ctx.cast(ctx.op(f"{i} * {_lit(step)} + {_lit(start)}"), wide, dt)

    return Pointwise(fn, _shape(meta), dt, meta.device, node, cheap=True)


# --- reductions ---------------------------------------------------------------------------------
def _dims(dims, ndim) -> tuple[int, ...]:
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return tuple(range(ndim))
    if isinstance(dims, int):
        dims = [dims]
    return tuple(sorted({d % max(ndim, 1) for d in dims}))


def reduction(G, node, meta, x, dims, rtype, keepdim=False, item=None, scale=None, src_dtype=None):
    if not isinstance(x, Value) or numel(x.shape) == 0:
        return None
    x = G.use(x, node)
    rd = _dims(dims, len(x.shape))
    if not x.shape:
        rd = ()
    if rtype in ("sum", "prod") and src_dtype is not None:
        x = pointwise(G, None, _Meta(x.shape, src_dtype, x.device), [x], lambda v: v, compute=x.dtype)
    if rtype in ("sum", "prod") and x.dtype.is_floating_point is False and meta.dtype.is_floating_point:
        return None
    r = Reduction(x, rtype, rd, keepdim, _shape(meta), meta.dtype, meta.device, node, item, scale)
    return G.realize(r)


class _Meta:
    def __init__(self, shape, dtype, device):
        self.shape, self.dtype, self.device = shape, dtype, device


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
    rd = _dims(dims, len(x.shape))
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
    rd = _dims(dims, len(x.shape))
    n = numel([x.shape[d] for d in rd])
    corr = 1 if correction is None else correction
    corr = int(corr) if float(corr).is_integer() else corr  # 1.0 from the decomposition: keep n - corr an int
    mean = reduction(G, node, _Meta(_keep(x.shape, rd), mmeta.dtype, x.device), x, rd, "sum", True,
                     item=1 if both else None, scale=reciprocal(n, 1.0))  # fmt: skip
    full = x.shape

    def sq(ctx, idx):
        v = ctx.cast(x.load(ctx, idx), x.dtype, torch.float32 if x.dtype != torch.float64 else x.dtype)
        m = mean.load(ctx, ["0" if d in rd else i for d, i in enumerate(idx)])
        d = ctx.op(f"{v} - {m}")
        return ctx.op(f"{d} * {d}")

    src = Pointwise(sq, full, compute_dtype(x.dtype), x.device, None)
    var = G.realize(Reduction(src, "sum", rd, keepdim, _shape(vmeta), vmeta.dtype, x.device, node,
                              0 if both else None, reciprocal(n - corr)))  # fmt: skip
    if not both:
        return var
    return var, (mean if keepdim else G.view_as(mean, _shape(mmeta), node, 1))


def _keep(shape, rd):
    return tuple(1 if d in rd else s for d, s in enumerate(shape))
