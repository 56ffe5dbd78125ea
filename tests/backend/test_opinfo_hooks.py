"""op_db through fxlens's bisect hooks: FXLENS_CHECK_KERNELS (each kernel against an fp64 ATen
replay of its FX nodes) and FXLENS_KERNEL_FALLBACK (every kernel replaced by that ATen replay).

bisect trusts both: a check that flags a correct kernel, or a replay that crashes or computes
something else, turns into a false verdict (a kernel blamed, or a crash that is the hook's own).
So every float32 OpInfo, first 2 samples, forward: under the check, no crash, no wrong output and
no kernel flagged; under the fallback, no crash and eager's numbers. Slow (~4 min per hook on one
core here); chunked so `-n 2` spreads it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))

from opinfo_check import check_op, opinfo_id, quiet  # noqa: E402

pytestmark = [pytest.mark.triton, pytest.mark.slow]

CHUNKS = 6
HOOKS = {
    "check": ("FXLENS_CHECK_KERNELS", "1"),
    # a plain index names that kernel in every graph: all of them, for graphs of up to 64 kernels
    "fallback": ("FXLENS_KERNEL_FALLBACK", ",".join(map(str, range(64)))),
}


def _ops(chunk: int) -> list:
    from torch.testing._internal.common_methods_invocations import op_db

    ops = sorted(op_db, key=opinfo_id)
    return [
        op for i, op in enumerate(ops) if i % CHUNKS == chunk and torch.float32 in op.supported_dtypes("cpu")
    ]


@pytest.mark.parametrize("chunk", range(CHUNKS))
@pytest.mark.parametrize("hook", sorted(HOOKS))
def test_op_db_under_the_bisect_hooks(monkeypatch, hook, chunk):
    from fxlens.backend import runtime

    checks: list = []
    monkeypatch.setattr(runtime, "log_json", lambda name, obj: checks.append(obj))
    monkeypatch.setenv(*HOOKS[hook])
    problems, ran = [], 0
    for op in _ops(chunk):
        checks.clear()
        with quiet():
            r = check_op(op, torch.float32, "forward", 2)
        ran += r.samples
        if r.status in ("crash", "wrong", "xpass"):
            problems.append(f"{r.op}: {r.status}: {r.failure or r.xfail}")
        flagged = [f"{c['name']} (max abs err {c['max_abs_err']:.3g})" for c in checks if not c["ok"]]
        if flagged:
            problems.append(f"{r.op}: kernels flagged by the check: {', '.join(flagged)}")
    assert ran > 0
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems)
