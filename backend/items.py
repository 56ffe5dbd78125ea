"""What graph lowering records besides realized values: the ATen calls between kernels (`Extern`) and
the fusion `Budget`, which holds every fusion decision (`Decision`) in the order it was taken.

Kept apart from graph.py because the scheduler, the wrapper and the lowerings that emit ATen calls
themselves (lower/rng.py) use these records without needing graph lowering.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch.fx.node import map_aggregate

from fxlens.backend.ir import Buffer


@dataclass(eq=False)
class Extern:
    """An ATen call between kernels (a fallback): `outs = op(*args, **kwargs)`."""

    name: str
    node: torch.fx.Node
    args: tuple
    kwargs: dict
    outs: list  # Buffer or None per output (a single output is a one-element list)
    tuple_out: bool

    @property
    def reads(self) -> set[str]:
        names = set()
        map_aggregate(
            (self.args, self.kwargs), lambda a: names.add(a.base.name) if isinstance(a, Buffer) else a
        )
        return names


@dataclass
class Decision:
    index: int
    fused: bool
    a: object  # node name, or a Kernel (named once kernels are named)
    b: str
    reason: str


@dataclass
class Budget:
    """Fusion decisions so far; FXLENS_FUSION_LIMIT=N applies only the first N."""

    limit: int | None
    decisions: list = field(default_factory=list)

    def allowed(self) -> bool:
        return self.limit is None or len(self.decisions) < self.limit

    def record(self, fused: bool, a, b: str, reason: str) -> None:
        self.decisions.append(Decision(len(self.decisions), fused, a, b, reason))
