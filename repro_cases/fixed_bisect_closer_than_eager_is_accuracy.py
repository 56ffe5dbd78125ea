# fxlens corpus case: a fixed bug kept as a regression test (DESIGN.md style rule 11; issue 21.2).
# A bf16 graph compiled by a backend that computes in fp32 and rounds once (as inductor does,
# pytorch/pytorch#159239) is closer to fp64 than eager, and the script's assert_close against eager
# fails. `fxlens bisect` called that "crash: AssertionError" and suggested `--check accuracy`,
# which then refused. This runs the bisect wrapper in-process with such a backend and reads the
# run as bisect does: an accuracy failure, the compiled value closer to fp64 than eager's.
# expect: exit 0
import itertools
import os
import sys
import tempfile
from pathlib import Path

import torch

from fxlens import config
from fxlens.bisect import backend as wrapper
from fxlens.bisect.runs import OUTPUT_FILE, read_outcome
from fxlens.bisect.verdict import closer_clause
from fxlens.trace.session import write_info


def upcasting(gm, example_inputs):  # fp32 inside, one rounding at the end
    def run(*args):
        outs = gm(*[a.float() if a.is_floating_point() else a for a in args])
        return [o.to(torch.bfloat16) for o in outs]

    return run


def rope(q, cos, sin):
    return q * cos + q.flip(-1) * sin


if __name__ == "__main__":
    session = Path(tempfile.mkdtemp())
    write_info(session, {"command": "run"})
    os.environ.update({"FXLENS_SESSION": str(session), config.ENV_BISECT_CHECK: "auto"})
    os.environ[config.ENV_BISECT_STAGE] = f"{__file__}:upcasting"
    wrapper._ordinals = itertools.count()
    g = torch.Generator().manual_seed(0)
    q, ang = torch.randn(64, 32, generator=g).bfloat16(), torch.rand(64, 32, generator=g) * 6
    cos, sin = ang.cos().bfloat16(), ang.sin().bfloat16()
    compiled = torch.compile(rope, backend=wrapper.wrapper)(q, cos, sin)
    try:
        torch.testing.assert_close(compiled, rope(q, cos, sin))
        sys.exit("assert_close passed: no case")
    except AssertionError as e:  # what the script's traceback shows, as bisect's run would save it
        (session / OUTPUT_FILE).write_text(
            f'Traceback (most recent call last):\n  File "{__file__}", line 50, in <module>\n'
            f"AssertionError: {str(e).splitlines()[0]}\n"
        )
    out = read_outcome(1, "upcasting", session, 1, 0.0)
    print(out.kind, out.error, closer_clause(out.closer), sep="\n")
    c = out.closer or {}
    ok = out.kind == "accuracy" and out.outside and c.get("closer_to_fp64") and c.get("op") == "add"
    sys.exit(0 if ok else 1)
