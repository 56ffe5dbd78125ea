"""`histc` as two kernels: a zero-filled histogram, then one pass over the input that adds 1 to
each element's bin with `tl.atomic_add` (counts are integers, so the order of the additions cannot
change them: bit-exact with eager).

The bin is eager's (ATen's histogramdd kernel, linear interpolation without the local search, which
is what histc asks for), step for step in the input's dtype: elements outside [min, max] and NaN are
skipped, `pos = trunc((x - min) * bins / (max - min))`, and x == max goes to the last bin. min and
max are the bin edges eager's `linspace` makes, i.e. rounded to the dtype first.

Left to ATen: min == max (eager takes the range from the data, and raises when it is not finite:
an error a kernel cannot raise), fp16/bf16 (eager rounds each step to the half type), a min > max or
non-finite range (eager raises), symbolic sizes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy
import torch

from fxlens.backend.ir import TL_DTYPE, Pointwise, Value, decompose, numel
from fxlens.backend.lower.core import register
from fxlens.backend.lower.index import Scatter, ScatterNode

aten = torch.ops.aten
_DTYPES = (torch.float32, torch.float64)  # tl.atomic_add's float types whose math eager does in-type


@dataclass(eq=False)
class HistcPass(Scatter):
    """Over the input (`src`, domain `shape`): `atomic_add(dst[bin(x)], 1)` for x inside the range."""

    lo: float = 0.0
    hi: float = 0.0
    width: float = 1.0  # hi - lo, rounded to the dtype as eager's subtraction is
    bins: int = 1

    def emit(self, ctx, sn) -> None:
        ctx.enter(self.node)
        dt = self.dst.dtype
        ty = TL_DTYPE[dt]
        x = self.src.load(ctx, decompose("xindex", self.shape))
        inside = ctx.op(f"({x} >= {self.lo!r}) & ({x} <= {self.hi!r})")  # False for NaN
        scaled = ctx.op(f"({x} - tl.full([1], {self.lo!r}, {ty})) * tl.full([1], {float(self.bins)!r}, {ty})")
        width = f"tl.full([1], {self.width!r}, {ty})"
        # correctly rounded division (Triton's fp32 `/` may be approximate on a GPU)
        q = ctx.op(f"tl.math.div_rn({scaled}, {width})" if dt == torch.float32 else f"{scaled} / {width}")
        pos = ctx.op(f"tl.where({inside}, {q}, 0.0).to(tl.int64)")
        pos = ctx.op(f"tl.where({pos} >= {self.bins}, {self.bins - 1}, {pos})")  # x == max: last bin
        p = ctx.pointer_param(self.dst.base)
        ctx.loaded.setdefault(self.dst.base.name, [])  # the zeros must be stored: this kernel adds to them
        ctx.emit(f"tl.atomic_add({p} + ({pos}), {ctx.full(1, dt)}, xmask & {inside})")
        ctx.written[self.dst.base.name] = self.dst.base


@register(aten.histc.default)
def _histc(G, node, meta, x, bins=100, min=0, max=0):  # noqa: A002 - ATen's argument names
    dt = meta.dtype
    if not isinstance(x, Value) or dt not in _DTYPES or x.dtype != dt or not isinstance(bins, int):
        return None
    if min == max or not (math.isfinite(min) and math.isfinite(max)) or min > max or bins <= 0:
        return None
    # linspace's end points, and eager's subtraction of them, in the dtype (numpy: no fake tensors)
    ftype = numpy.float32 if dt == torch.float32 else numpy.float64
    lo, hi = ftype(min), ftype(max)
    zeros = Pointwise(lambda ctx, idx: ctx.full(0, dt), (bins,), dt, meta.device, None)
    hist = G.realize(zeros)
    if numel(x.shape) > 0:
        x = G.use(x, node)
        h = HistcPass(hist, x, None, True, tuple(x.shape), dt, meta.device, node, None,
                      float(lo), float(hi), float(hi - lo), bins)  # fmt: skip
        G.items.append(ScatterNode(h, hist, mutation=True))
    return G.relabel(hist, node)
