"""The backend's stages as one ordered list: the names that logs, the bisector and the TUI show.

Each stage does strictly more of the compiler's work than the one before, so stepping the list
narrows a failure to the first stage that introduces it.
"""

from __future__ import annotations

# (name, what it adds over the previous stage)
STAGES: tuple[tuple[str, str], ...] = (
    ("fxlens_eager", "runs the Dynamo FX graph as is"),
    ("fxlens_aot_eager", "AOTAutograd forward/backward with fxlens's decompositions, run eagerly"),
    ("fxlens_nofusion", "fxlens lowering + Triton codegen, one kernel per op (fusion off)"),
    ("fxlens", "the full pipeline: lowering, fusion, Triton codegen, launch"),
)

STAGE_NAMES: tuple[str, ...] = tuple(name for name, _ in STAGES)
