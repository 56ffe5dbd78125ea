"""Every lowering registered: importing this module imports every op family, and each family adds
its ops to `fxlens.backend.lower.core.LOWERINGS` (the table graph lowering looks ops up in) when
imported; graph lowering imports this module once for that, and reads the table from `core`.

The order below is the registration order the flat layout had (graph.py imported the families by
name; each registers after the modules it imports).
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
