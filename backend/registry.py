"""Backend entry points (`torch_dynamo_backends` group): `torch.compile(m, backend="fxlens")`.

Each function is a Dynamo backend `(gm, example_inputs) -> callable`. Heavy modules are imported on
first compile, not at entry-point resolution.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from fxlens.backend.trace_log import log_json


def _log_stage(stage: str, gm: torch.fx.GraphModule) -> None:
    log_json("stage", {"stage": stage, "num_nodes": len(gm.graph.nodes)})


def fxlens_eager(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable:
    """Stage 1: run the Dynamo FX graph unchanged."""
    _log_stage("fxlens_eager", gm)
    return gm.forward


def fxlens_aot_eager(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable:
    """Stage 2: AOTAutograd (forward and backward) with fxlens's decompositions, run eagerly."""
    from fxlens.backend.lower.aot import aot_eager_compile

    _log_stage("fxlens_aot_eager", gm)
    return aot_eager_compile(gm, example_inputs)


def fxlens_nofusion(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable:
    """Stage 3: the full pipeline with fusion off (one kernel per op)."""
    from fxlens.backend.compile_fx import compile_graph

    _log_stage("fxlens_nofusion", gm)
    return compile_graph(gm, example_inputs, fusion=False)


def fxlens_inline(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable:
    """Stage 4: pointwise producers inlined into their consumers (vertical fusion), no kernels merged."""
    from fxlens.backend.compile_fx import compile_graph

    _log_stage("fxlens_inline", gm)
    return compile_graph(gm, example_inputs, fusion="inline")


def fxlens(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable:
    """Stage 5: AOTAutograd -> lowering -> fusion -> Triton codegen -> launch."""
    from fxlens.backend.compile_fx import compile_graph

    _log_stage("fxlens", gm)
    return compile_graph(gm, example_inputs, fusion=True)


__all__ = ["fxlens_eager", "fxlens_aot_eager", "fxlens_nofusion", "fxlens_inline", "fxlens"]
