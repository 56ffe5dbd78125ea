"""Every lowering registered: the table graph lowering looks ops up in (`LOWERINGS`), and the view
ops it counts uses through (`VIEW_OPS`).

Each family adds to `LOWERINGS` when imported. The order below is the registration order the flat
layout had (graph.py imported the families by name; each registers after the modules it imports).
Two registrations replace an earlier one, and each importing module imports the one it replaces
first, so neither depends on this order: elementwise_math's pow over arith's, index's scatter over views'.
"""

from __future__ import annotations

from fxlens.backend.lower import arith, constants, reductions  # noqa: F401 - the core ops, first

# isort: split
from fxlens.backend.lower import (  # noqa: F401
    bessel,
    diagonal,
    distance,
    division,
    elementwise_math,
    histogram,
    igamma,
    index,
    masked,
    pool,
    pool3d_adaptive,
    rng,
    scan,
    scatter,
    search,
    sort,
    special,
)
from fxlens.backend.lower.core import LOWERINGS
from fxlens.backend.lower.views import VIEW_OPS

__all__ = ["LOWERINGS", "VIEW_OPS"]
