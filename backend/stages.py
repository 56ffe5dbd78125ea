"""Every compiler stage fxlens knows, one row each: the rungs `fxlens bisect` steps, and what each does.

A ladder is the rows of one family in order, each doing strictly more of the compiler's work than
the one before, so stepping it narrows a failure to the first stage that introduces it. fxlens's own
family (`fxlens`) is this package's compiler; torch's (`inductor`) are torch's registered backends.
What a stage can do (only capture, generate fxlens's kernels, fuse them, take torch.compile's
mode/options, be narrowed further by torch's CompilerBisector) is a column of its row: the toolkit
reads the columns and never lists stage names of its own.

Adding a stage is adding a row here, in ladder order (and, for one fxlens registers, its backend
function and its `torch_dynamo_backends` entry point in pyproject.toml; a test checks the two agree).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Stage:
    """One rung of a ladder."""

    name: str  # the backend name torch.compile takes
    family: str  # the ladder it is a rung of: fxlens | inductor
    adds: str  # what it adds over the rung below, in words (the docs table)
    # `module:function` of the torch_dynamo_backends entry point fxlens registers; None: torch's own
    entry: str | None = None
    # runs Dynamo's graph eagerly (maybe through AOTAutograd): nothing is compiled for speed
    capture_only: bool = False
    codegen: bool = False  # runs fxlens's own kernels: a failing kernel can be searched for
    fuses: bool = False  # fxlens fuses kernels here: a failing fusion decision can be searched for
    options: bool = False  # takes torch.compile's mode/options (inductor's wrapper applies them)
    torch_bisectable: bool = False  # torch's CompilerBisector narrows it further (passes, lowerings)
    # inductor config switches the stage sets over the call's own (a rung of inductor with less on)
    inductor_config: tuple[tuple[str, object], ...] = ()
    # the compiler of one ATen graph a reproducer calls at minify's AOT level (a key of
    # fxlens.minify.repro_writer.INNER_COMPILERS), or None: no inner compiler of its own
    inner: str | None = None
    # modules its first compile imports, imported ahead by minify's zygote
    preload: tuple[str, ...] = ()


_REGISTRY = "fxlens.backend.registry"

STAGES: tuple[Stage, ...] = (
    Stage(
        "fxlens_eager",
        "fxlens",
        "runs the Dynamo FX graph as is",
        f"{_REGISTRY}:fxlens_eager",
        capture_only=True,
    ),
    Stage(
        "fxlens_aot_eager",
        "fxlens",
        "AOTAutograd forward/backward with fxlens's decompositions, run eagerly",
        f"{_REGISTRY}:fxlens_aot_eager",
        capture_only=True,
    ),
    Stage(
        "fxlens_nofusion",
        "fxlens",
        "fxlens lowering + Triton codegen, one kernel per op (fusion off)",
        f"{_REGISTRY}:fxlens_nofusion",
        codegen=True,
        inner="fxlens_nofusion",
        preload=("fxlens.backend.compile_fx",),
    ),
    Stage(
        "fxlens_inline",
        "fxlens",
        "vertical fusion only: pointwise producers inlined into their consumers, no kernels merged",
        f"{_REGISTRY}:fxlens_inline",
        codegen=True,
        fuses=True,
        preload=("fxlens.backend.compile_fx",),
    ),
    Stage(
        "fxlens",
        "fxlens",
        "the full pipeline: lowering, fusion, Triton codegen, launch",
        f"{_REGISTRY}:fxlens",
        codegen=True,
        fuses=True,
        inner="fxlens",
        preload=("fxlens.backend.compile_fx",),
    ),
    Stage("eager", "inductor", "runs the Dynamo FX graph as is (torch's)", capture_only=True),
    Stage("aot_eager", "inductor", "AOTAutograd forward/backward, run eagerly (torch's)", capture_only=True),
    Stage(
        "aot_eager_decomp_partition",
        "inductor",
        "AOTAutograd with inductor's decompositions and partitioner, run eagerly (torch's)",
        capture_only=True,
    ),
    Stage(
        "inductor",
        "inductor",
        "torch's compiler: graph passes, lowering, fusion, C++/Triton codegen",
        options=True,
        torch_bisectable=True,
        inner="inductor",
        preload=("torch._inductor.compile_fx",),
    ),
)

BY_NAME: dict[str, Stage] = {s.name: s for s in STAGES}

# fxlens's own ladder, in order (the names logs and the TUI show)
STAGE_NAMES: tuple[str, ...] = tuple(s.name for s in STAGES if s.family == "fxlens")


def stage(name: str) -> Stage | None:
    """The row of a stage name, or None (a backend of the script's own, `module:attr`, ...)."""
    return BY_NAME.get(name)


def capture_only(backend) -> bool:
    """Whether `backend` (a name, or the dotted name doctor records for a callable) only captures."""
    row = stage(str(backend or "").rsplit(".", 1)[-1].rsplit(":", 1)[-1])
    return bool(row and row.capture_only)


def family(name: str) -> tuple[Stage, ...]:
    """The rungs of the ladder `name` belongs to, in order."""
    return tuple(s for s in STAGES if s.family == BY_NAME[name].family)
