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


def kernel_fallback() -> frozenset[str]:
    """FXLENS_KERNEL_FALLBACK=LIST: kernels that run as their ATen ops instead of Triton.

    LIST is comma separated; each entry is a kernel name (`fxk_forward_3_add_erf`), `GRAPH:INDEX`
    (`forward:3`, `backward:0`, `inference:1`), or a plain INDEX (that index in every graph).
    """
    raw = os.environ.get("FXLENS_KERNEL_FALLBACK", "")
    return frozenset(p.strip() for p in raw.split(",") if p.strip())


def check_kernels() -> bool:
    """FXLENS_CHECK_KERNELS=1: after each kernel, recompute its outputs with its ATen ops (fp64 where
    floating) and log a `fxlens_kernel_check` artifact {graph, name, ops, max_abs_err, max_rel_err, ok}."""
    return os.environ.get("FXLENS_CHECK_KERNELS", "").strip() not in ("", "0")


def persistent_rmax() -> int:
    """FXLENS_PERSISTENT_RMAX=N (default 1024): rows up to N elements are reduced in one block
    (persistent reduction); longer rows loop over blocks of the reduced axis."""
    return int(os.environ.get("FXLENS_PERSISTENT_RMAX", "1024"))


def cache_dir() -> str | None:
    """FXLENS_CACHE_DIR=PATH: where generated kernels are cached by source hash (default: a per-user
    folder under the system temp dir)."""
    return os.environ.get("FXLENS_CACHE_DIR") or None


def max_block() -> int:
    """FXLENS_MAX_BLOCK=N (default 16384): elements per program on CPU (the interpreter is fastest
    with few, large programs); on CUDA blocks are chosen for the GPU and this is ignored."""
    return int(os.environ.get("FXLENS_MAX_BLOCK", "16384"))


def recompute_max_ops() -> int:
    """FXLENS_RECOMPUTE_MAX_OPS=N (default 6): a pointwise value with several users whose code is at
    most N lines (loads, ops and its store; 4N for one-element values) is recomputed in each user
    instead of stored once."""
    return int(os.environ.get("FXLENS_RECOMPUTE_MAX_OPS", "6"))


def fallback_random() -> bool:
    """FXLENS_FALLBACK_RANDOM=1: rand/randn/bernoulli/dropout run as ATen calls (eager's numbers)
    instead of in-kernel Philox (like inductor's config.fallback_random)."""
    return os.environ.get("FXLENS_FALLBACK_RANDOM", "").strip() not in ("", "0")
