"""Every environment switch the backend reads, declared once and typed.

Read at compile time (not import time) so tests can set them per run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

INJECT_KINDS = ("compile_error", "runtime_error", "accuracy")


@dataclass(frozen=True)
class Inject:
    """A fault to inject (FXLENS_INJECT=KIND:OP), like inductor's *_TESTING_ONLY switches."""

    kind: str  # one of INJECT_KINDS
    op: str  # aten op name, e.g. "aten.erf" (matches aten.erf.default and other overloads)


def inject() -> Inject | None:
    """The fault requested by FXLENS_INJECT, or None. A malformed value raises ValueError."""
    raw = os.environ.get("FXLENS_INJECT", "").strip()
    if not raw:
        return None
    kind, sep, op = raw.partition(":")
    if not sep or kind not in INJECT_KINDS or not op:
        raise ValueError(f"FXLENS_INJECT={raw!r}: expected KIND:OP with KIND in {', '.join(INJECT_KINDS)}")
    return Inject(kind, op)


def fusion_limit() -> int | None:
    """FXLENS_FUSION_LIMIT=N applies only the first N fusion decisions (the bisector replays them)."""
    raw = os.environ.get("FXLENS_FUSION_LIMIT", "").strip()
    return int(raw) if raw else None


def interpret() -> bool:
    """Whether kernels for CPU tensors run under Triton's interpreter (always, there is no CPU driver)."""
    return os.environ.get("FXLENS_INTERPRET", "1") != "0"
