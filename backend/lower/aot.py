"""Lowering to ATen: AOTAutograd with a decomposition table built from torch's own registries."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import torch

from fxlens.backend.torch_compat import (
    aot_module_simplified,
    core_aten_decompositions,
    get_decompositions,
    make_boxed_func,
)
from fxlens.backend.trace_log import log_artifact

# Inductor-style extras on top of core ATen: norms via var_mean, so reductions over the same rows
# can be fused later. Named from torch's registry, never hand-copied.
_EXTRA_DECOMPS = [
    torch.ops.aten.native_layer_norm,
    torch.ops.aten.native_layer_norm_backward,
    torch.ops.aten._softmax,
    torch.ops.aten._log_softmax,
    torch.ops.aten.gelu,
    torch.ops.aten.gelu_backward,
    torch.ops.aten.leaky_relu,
    torch.ops.aten.leaky_relu_backward,
    torch.ops.aten.elu,
    torch.ops.aten.elu_backward,
    torch.ops.aten.hardtanh,
    torch.ops.aten.hardtanh_backward,
    torch.ops.aten.silu,
    torch.ops.aten.silu_backward,
    torch.ops.aten.repeat,
    torch.ops.aten.addcmul,
    torch.ops.aten.addcdiv,
    torch.ops.aten.lerp,
    torch.ops.aten._native_batch_norm_legit_functional,
    torch.ops.aten.native_batch_norm_backward,
    torch.ops.aten.native_group_norm,
    torch.ops.aten.native_group_norm_backward,
    # found running real models through the backend (tests/backend/test_zoo.py): eval-mode batch
    # norm (ResNet inference), instance norm, slicing backward (rotary embeddings: Llama, Mistral,
    # GPT-NeoX, RoFormer) and vector norms were ATen fallbacks (padding: lower/views.py)
    torch.ops.aten._native_batch_norm_legit_no_training,
    torch.ops.aten._native_batch_norm_legit,
    torch.ops.aten.slice_scatter,
    torch.ops.aten.linalg_vector_norm,
]


# Found by the op_db coverage sweep (bench/opinfo_coverage.py): ops that were ATen fallbacks and whose
# torch decomposition reaches only lowered ops (each checked against eager there and in tests).
_COVERAGE_DECOMPS = [
    torch.ops.aten.as_strided_copy,
    torch.ops.aten.adaptive_max_pool3d,
    torch.ops.aten.max_pool3d_with_indices,
    torch.ops.aten.narrow_copy,
    torch.ops.aten.view_copy,
    torch.ops.aten.dist,
    torch.ops.aten.permute_copy,
    torch.ops.aten.unbind_copy,
    torch.ops.aten.unfold,
    torch.ops.aten.grid_sampler_2d,
    torch.ops.aten.ldexp,
]


# Random ops the backend generates in-kernel (lower/rng.py): dropout as `rand_like(x) > p`, so
# AOTAutograd saves the boolean mask for the backward pass. FXLENS_FALLBACK_RANDOM=1 keeps ATen's.
_RANDOM_DECOMPS = [torch.ops.aten.native_dropout]


def decomposition_table() -> dict:
    """fxlens's decomposition table: core ATen decompositions plus the few fusion-friendly extras."""
    from fxlens.backend import config

    return _decomposition_table(config.fallback_random())


@functools.cache
def _decomposition_table(fallback_random: bool) -> dict:
    table = dict(core_aten_decompositions())
    table.update(
        get_decompositions(_EXTRA_DECOMPS + _COVERAGE_DECOMPS + ([] if fallback_random else _RANDOM_DECOMPS))
    )
    # Attention runs as an extern (ATen's fused kernel): torch's core decomposition of
    # _scaled_dot_product_flash_attention_for_cpu gives wrong gradients (tiny GPT-2, torch 2.13).
    for op in list(table):
        if "scaled_dot_product" in str(op):
            del table[op]
    return table


def _logging_compiler(kind: str) -> Callable:
    def compiler(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable:
        log_artifact(f"aten_{kind}_graph", lambda: gm.print_readable(print_output=False))
        return make_boxed_func(gm.forward)

    return compiler


def aot_options() -> dict:
    """The `aot_module_simplified` keywords of every fxlens stage past eager, less the compilers
    (also what `fxlens minify` re-traces ATen graphs with)."""
    from fxlens.backend.torch_compat import min_cut_rematerialization_partition

    return {
        "decompositions": decomposition_table(),
        "partition_fn": min_cut_rematerialization_partition,
        "keep_inference_input_mutations": True,
    }


def aot_eager_compile(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable:
    """AOTAutograd forward/backward (min-cut partition) with fxlens's decompositions, run eagerly."""
    return aot_module_simplified(
        gm,
        example_inputs,
        fw_compiler=_logging_compiler("forward"),
        bw_compiler=_logging_compiler("backward"),
        inference_compiler=_logging_compiler("inference"),
        **aot_options(),
    )
