"""The loop-level IR: every tensor value is a function of its index.

A `Buffer` is realized storage (graph input, extern output, kernel output, or a strided view of one).
A `Pointwise` is a function `fn(ctx, index) -> var` that emits Triton code computing one element per
index; views of it are index remappings, so they never copy. A `Reduction` reduces a pointwise
function over some dimensions; it is always realized by the scheduler. Index expressions are strings
over `xindex` / `rindex` (the kernel's flat iteration variables), evaluable both by Triton and numpy.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from fxlens.backend.symbolic import is_static, render, smax1

TL_DTYPE = {
    torch.float32: "tl.float32",
    torch.float16: "tl.float16",
    torch.bfloat16: "tl.bfloat16",
    torch.float64: "tl.float64",
    torch.int8: "tl.int8",
    torch.int16: "tl.int16",
    torch.int32: "tl.int32",
    torch.int64: "tl.int64",
    torch.uint8: "tl.uint8",
    torch.bool: "tl.int1",
}


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype a value is computed in: fp16/bf16 are computed in fp32."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def numel(shape: Sequence[int]) -> int:
    return math.prod(shape)


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= smax1(s)
    return tuple(reversed(out))


class FlatIndex(list):
    """Per-dim indices that `decompose` made from one flat index: `linear` over the same row-major
    layout folds them back into the flat index (no divisions, which cost most with sizes known
    only at run time)."""

    var: str = ""
    sizes: tuple = ()


def decompose(var: str, sizes: Sequence[int]) -> list[str]:
    """Per-dimension index expressions of a flat row-major index `var` over `sizes`."""
    strides = contiguous_strides(sizes)
    first = next((i for i, s in enumerate(sizes) if s != 1), None)
    out = []
    for i, (s, st) in enumerate(zip(sizes, strides, strict=True)):
        if s == 1:
            out.append("0")
            continue
        e = var if st == 1 else f"({var} // {render(st)})"
        out.append(e if i == first else f"({e} % {render(s)})")
    flat = FlatIndex(out)
    flat.var, flat.sizes = var, tuple(sizes)
    return flat


def linear(idx: Sequence[str], strides: Sequence[int], offset: int = 0) -> str:
    """`offset + sum(idx[d] * strides[d])` as a string, skipping zero terms."""
    if isinstance(idx, FlatIndex) and len(strides) == len(idx.sizes) and any(s != 1 for s in idx.sizes):
        dense = contiguous_strides(idx.sizes)
        if all(st == c for s, st, c in zip(idx.sizes, strides, dense, strict=True) if s != 1):
            return idx.var if offset == 0 else f"{render(offset)} + {idx.var}"
    terms = [render(offset)] if offset != 0 else []
    for i, st in zip(idx, strides, strict=True):
        if i == "0" or st == 0:
            continue
        terms.append(i if st == 1 else f"{i} * {render(st)}")
    return " + ".join(terms) if terms else "0"


def broadcast_index(idx: Sequence[str], in_shape: Sequence[int], out_shape: Sequence[int]) -> list[str]:
    """Index into an input of `in_shape` broadcast to `out_shape` (right-aligned, size-1 dims -> 0)."""
    if tuple(in_shape) == tuple(out_shape):
        return idx  # same shape: the index as it is (a FlatIndex stays one)
    lead = len(out_shape) - len(in_shape)
    return ["0" if s == 1 and out_shape[lead + d] != 1 else idx[lead + d] for d, s in enumerate(in_shape)]


class Value:
    """A tensor value of the IR."""

    shape: tuple[int, ...]
    dtype: torch.dtype
    device: torch.device
    node: torch.fx.Node | None

    def load(self, ctx, idx: Sequence[str]) -> str:  # pragma: no cover - abstract
        raise NotImplementedError


@dataclass(eq=False)
class Buffer(Value):
    """Realized storage, or a strided view of one (`root` is the allocation it lives in)."""

    name: str
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: torch.dtype
    device: torch.device
    node: torch.fx.Node | None = None
    item: int | None = None  # index into the node's tuple result, for multi-output nodes
    offset: int = 0
    root: Buffer | None = None
    kind: str = "kernel"  # input | extern | kernel

    @property
    def base(self) -> Buffer:
        return self.root or self

    def load(self, ctx, idx: Sequence[str]) -> str:
        return ctx.load(self, idx)

    def storage_numel(self):
        if numel(self.shape) == 0:
            return 0
        return 1 + sum((s - 1) * st for s, st in zip(self.shape, self.stride, strict=True))

    def is_full_view(self) -> bool:
        b = self.base
        return self.root is None or (
            self.shape == b.shape and self.stride == b.stride and self.offset == b.offset
        )


@dataclass(eq=False)
class Pointwise(Value):
    """An elementwise function of the index; `fn(ctx, idx)` emits code and returns a variable."""

    fn: Callable
    shape: tuple[int, ...]
    dtype: torch.dtype
    device: torch.device
    node: torch.fx.Node | None = None
    cheap: bool = False  # constants/iota: inlined into every user, never realized for reuse

    def load(self, ctx, idx: Sequence[str]) -> str:
        if self.node is not None:
            ctx.enter(self.node)
        return self.fn(ctx, idx if isinstance(idx, FlatIndex) else list(idx))


@dataclass(frozen=True)
class Recip:
    """The scale 1/n of a reduction over a symbolic number n of elements (mean, variance)."""

    n: object  # a sympy expression


def reciprocal(n, zero=float("nan")):
    """1/n as a reduction scale: a float when n is known, else `Recip(n)` (divided at run time)."""
    if not is_static(n):
        return Recip(n)
    return 1.0 / n if n > 0 else zero


@dataclass(eq=False)
class Reduction(Value):
    """`rtype` over dims `rdims` of `src` (a Value of shape `full`); realized by the scheduler."""

    src: Value
    rtype: str  # sum prod max min argmax argmin any
    rdims: tuple[int, ...]
    keepdim: bool
    shape: tuple[int, ...]
    dtype: torch.dtype
    device: torch.device
    node: torch.fx.Node | None = None
    item: int | None = None
    scale: float | Recip | None = None  # multiply the result (mean = sum * 1/N)
    extra_nodes: list = field(default_factory=list)

    @property
    def full(self) -> tuple[int, ...]:
        return self.src.shape

    @property
    def xnumel(self) -> int:
        return numel([s for d, s in enumerate(self.full) if d not in self.rdims])

    @property
    def rnumel(self) -> int:
        return numel([self.full[d] for d in self.rdims])

    def load(self, ctx, idx):  # pragma: no cover - reductions are realized before use
        raise RuntimeError("fxlens: a Reduction must be realized before it is loaded")


def full_index(shape: Sequence[int], rdims: Sequence[int]) -> list[str]:
    """Per-dim index of a full reduction domain: reduced dims from `rindex`, the rest from `xindex`."""
    xs = decompose("xindex", [s for d, s in enumerate(shape) if d not in rdims])
    rs = decompose("rindex", [s for d, s in enumerate(shape) if d in rdims])
    out = []
    for d in range(len(shape)):
        out.append(rs.pop(0) if d in rdims else xs.pop(0))
    return out
