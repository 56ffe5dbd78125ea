# fxlens corpus case: a fixed bug kept as a regression test (DESIGN.md style rule 11; issue 21.1).
# pytorch/pytorch#193757's shape: eager raises on the input (a binary_cross_entropy target of 1.5),
# the script catches it and checks the compiled call raises the same. `fxlens bisect` marked the
# eager stage FAILS ("crash: RuntimeError: all elements of target should be between 0 and 1") on a
# run that exited 0, concluded "Dynamo's capture", and never tried the decomposition stage. This
# runs the bisect wrapper backend in-process: eager and aot_eager raise what eager raises (ok), and
# aot_eager_decomp_partition, whose decomposition drops the check, returns a value (no_raise).
# expect: exit 0
import itertools
import os
import sys
import tempfile

import torch

from fxlens import config
from fxlens.bisect import backend as wrapper
from fxlens.bisect.runs import read_outcome
from fxlens.trace.session import write_info


def fn(t):
    return torch.nn.functional.binary_cross_entropy(torch.ones_like(t), t)


def outcome(stage):
    session = tempfile.mkdtemp()
    write_info(__import__("pathlib").Path(session), {"command": "run"})
    os.environ.update(
        {"FXLENS_SESSION": session, config.ENV_BISECT_STAGE: stage, config.ENV_BISECT_CHECK: "auto"}
    )
    wrapper._ordinals = itertools.count()
    torch._dynamo.reset()
    try:
        torch.compile(fn, backend=wrapper.wrapper)(torch.ones(4, 4) * 1.5)
    except RuntimeError:
        pass  # the script's own try/except
    return read_outcome(1, stage, session, 0, 0.0)


if __name__ == "__main__":
    verdicts = {s: outcome(s) for s in ("eager", "aot_eager", "aot_eager_decomp_partition")}
    for s, o in verdicts.items():
        print(f"{s}: {o.kind or 'ok'} {o.error}")
    ok = verdicts["eager"].kind is None and verdicts["aot_eager"].kind is None
    bad = verdicts["aot_eager_decomp_partition"]
    ok = ok and bad.kind == "no_raise" and bad.error.endswith("aot_eager_decomp_partition returns a value")
    sys.exit(0 if ok else 1)
