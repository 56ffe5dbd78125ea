"""When an op runs as an ATen call instead of its lowering, and the reason recorded for it.

Checked before a lowering runs: operands or results the codegen cannot represent (dtypes without a
Triton form, non-strided layouts), and symbolic sizes reaching a lowering not audited for them. After
it runs: the reason for a lowering that raised, with the file and line it raised at.
"""

from __future__ import annotations

import os
import sys

import torch

from fxlens.backend.ir import TL_DTYPE, Value
from fxlens.backend.symbolic import is_static, sizes

# Lowering modules audited for symbolic sizes (every size printed through symbolic.render, no
# comparisons sympy cannot decide). Lowerings from other modules run as ATen calls when a size
# they see is symbolic.
SYMBOLIC_READY = {
    "fxlens.backend.lower.arith",
    "fxlens.backend.lower.constants",
    "fxlens.backend.lower.reductions",
    "fxlens.backend.lower.views",
    "fxlens.backend.lower.index",
    "fxlens.backend.lower.elementwise_math",  # pointwise only (pow.Tensor_Scalar lives there now: RMSNorm's x.pow(2))
}
# Lowerings audited for symbolic shapes whose scalar arguments must still be numbers.
SHAPES_READY = {
    "fxlens.backend.lower.scan._scan",
    "fxlens.backend.lower.scan._flip",
    "fxlens.backend.lower.division._div_rounding",
    "fxlens.backend.lower.division._floor_divide",
    "fxlens.backend.lower.division._remainder_fmod",
    "fxlens.backend.lower.rng._rand",
    "fxlens.backend.lower.rng._rand_like",
    "fxlens.backend.lower.rng._bernoulli",
}


def symbolic_ready(fn, leaves) -> bool:
    if fn.__module__ in SYMBOLIC_READY:
        return True
    scalars = [v for v in leaves if not isinstance(v, Value)]
    return f"{fn.__module__}.{fn.__name__}" in SHAPES_READY and is_static(*scalars)


def static_only(fn) -> str:
    """The reason for a lowering not audited for symbolic sizes that saw one."""
    return f"{_family(fn)} lowers static sizes only"


def _family(fn) -> str:
    # `lower_pool` for lower/pool.py: the name the families had as flat modules, so that recorded
    # reasons read as they did
    family = fn.__module__.removeprefix("fxlens.backend.lower.")
    return f"lower_{family}" if family != fn.__module__ else fn.__module__.split(".")[-1]


def raised_at(e: BaseException) -> str:
    """`file:line` of the innermost frame `e` was raised in: `lower/pool.py:12` for a lowering family
    (its bare name could be a stdlib module's: math.py, random.py), else the file's bare name."""
    where = e.__traceback__
    while where.tb_next is not None:
        where = where.tb_next
    folder, _, name = where.tb_frame.f_code.co_filename.rpartition("/")
    return f"{'lower/' if folder == _LOWER_DIR else ''}{name}:{where.tb_lineno}"


_LOWER_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lower")


def sees_symbolic_sizes(meta, leaves) -> bool:
    metas = meta if isinstance(meta, (tuple, list)) else [meta]
    for m in metas:
        if isinstance(m, torch.Tensor) and not is_static(*sizes(m.shape)):
            return True
    return any(not is_static(*v.shape) if isinstance(v, Value) else not is_static(v) for v in leaves)


def unsupported(meta, leaves) -> str | None:
    """Why the codegen cannot represent an operand or result (checked before any lowering runs)."""
    metas = meta if isinstance(meta, (tuple, list)) else [meta]
    for t in [
        *(m for m in metas if isinstance(m, torch.Tensor)),
        *(v for v in leaves if isinstance(v, Value)),
    ]:
        if t.dtype not in TL_DTYPE:
            return f"dtype {str(t.dtype).removeprefix('torch.')} has no Triton form in fxlens"
        if isinstance(t, torch.Tensor) and t.layout != torch.strided:
            return f"layout {t.layout} (only strided tensors are lowered)"
    if meta is None or (isinstance(meta, (tuple, list)) and not metas):
        return "no result metadata"
    return None


def failed(fn, node) -> str:
    """The reason recorded for a lowering that raised: the exception and where."""
    e = sys.exc_info()[1]
    place = raised_at(e)
    first = next((ln.strip() for ln in str(e).splitlines() if ln.strip()), "")
    return f"lowering {fn.__name__} raised {type(e).__name__}: {first[:160]} (at {place})"
