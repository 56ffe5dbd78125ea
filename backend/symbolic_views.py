"""Views of realized buffers with symbolic sizes: the strided reinterpretation, computed symbolically.

With static sizes `GraphLowering._strided` asks ATen (on a meta tensor) for the view's layout. Meta
tensors cannot have sympy sizes, so for symbolic buffers the common view ops are done here on
(shape, stride, offset) directly. Anything else returns None: the view is then a copy (an index
remapping of a lazy value) or an ATen call, both correct.
"""

from __future__ import annotations

import torch

from fxlens.backend.ir import Buffer, contiguous_strides
from fxlens.backend.symbolic import size

aten = torch.ops.aten

_RESHAPES = (aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten.squeeze.dim,
             aten.squeeze.dims, aten.squeeze.default, aten.unsqueeze.default)  # fmt: skip


def _contiguous(shape, stride) -> bool:
    return all(st == c for s, st, c in zip(shape, stride, contiguous_strides(shape), strict=True) if s != 1)


def _reshape(x: Buffer, out_shape):
    shape, stride = list(x.shape), list(x.stride)
    if _contiguous(shape, stride):
        return tuple(out_shape), contiguous_strides(out_shape), x.offset
    kept = [(s, st) for s, st in zip(shape, stride, strict=True) if s != 1]
    if [s for s, _ in kept] != [s for s in out_shape if s != 1]:
        return None  # merging or splitting non-contiguous dims: not a view we compute
    it = iter(kept)
    return tuple(out_shape), tuple(1 if s == 1 else next(it)[1] for s in out_shape), x.offset


def _norm(i, n):
    """A start/index argument: negative ints count from the end (n may be symbolic)."""
    if isinstance(i, int) and i < 0:
        return i + n
    return i


def strided_view(x: Buffer, target, args, out_shape):
    """(shape, stride, offset) of `target(x, *args)` as a view of x's storage, or None."""
    shape, stride, nd = list(x.shape), list(x.stride), len(x.shape)
    out_shape = tuple(out_shape)
    if target in _RESHAPES:
        return _reshape(x, out_shape)
    if target == aten.permute.default:
        dims = [d % nd for d in args[0]]
        return out_shape, tuple(stride[d] for d in dims), x.offset
    if target in (aten.t.default, aten.transpose.int):
        if nd < 2:
            return out_shape, tuple(stride), x.offset
        d0, d1 = (0, 1) if target == aten.t.default else (args[0] % nd, args[1] % nd)
        stride[d0], stride[d1] = stride[d1], stride[d0]
        return out_shape, tuple(stride), x.offset
    if target == aten.expand.default:
        lead = len(out_shape) - nd
        st = [0] * lead + [
            0 if s == 1 and out_shape[lead + d] != 1 else stride[d] for d, s in enumerate(shape)
        ]
        return out_shape, tuple(st), x.offset
    if target == aten.slice.Tensor:
        dim = (args[0] if args else 0) % nd
        start = _norm(args[1] if len(args) > 1 and args[1] is not None else 0, shape[dim])
        step = args[3] if len(args) > 3 else 1
        if not isinstance(step, int):
            return None
        stride[dim] = stride[dim] * step
        return out_shape, tuple(stride), x.offset + start * x.stride[dim]
    if target == aten.as_strided.default:
        # (size, stride[, storage_offset]) taken as they are, the offset counted as in the static
        # path (GraphLowering._strided: x's offset is its storage offset)
        stride_arg = tuple(size(st) for st in args[1])
        offset = size(args[2]) if len(args) > 2 and args[2] is not None else x.offset
        return out_shape, stride_arg, offset
    if target == aten.select.int:
        dim = args[0] % nd
        i = _norm(args[1], shape[dim])
        return out_shape, tuple(st for d, st in enumerate(stride) if d != dim), x.offset + i * stride[dim]
    return None
