"""The lowering table's old path: `fxlens.backend.lower.core` since the families moved into
`fxlens.backend.lower`. Re-exports what code written against the flat layout imported from here."""

# the ops this module registered itself before it was split (families register on their own import)
from fxlens.backend.lower import arith, constants, reductions  # noqa: F401
from fxlens.backend.lower.core import (
    LOWERINGS,
    _Meta,
    _promoted,
    _shape,
    libdevice_form,
    pointwise,
    reduction,
    register,
)

__all__ = [
    "LOWERINGS",
    "_Meta",
    "_promoted",
    "_shape",
    "libdevice_form",
    "pointwise",
    "reduction",
    "register",
]
