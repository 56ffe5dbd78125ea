# fxlens corpus case: a fixed bug kept as a regression test (DESIGN.md style rule 11; issue 34).
# Two compiled closures of one code object, compiled with one backend: Dynamo reuses a cached graph
# only for an equal backend, and under set_stance(skip_guard_eval_unsafe=True) runs no guard, so
# the second closure runs the first one's graph (a missing guard). `fxlens bisect` gave each
# torch.compile call its own new wrapper, so Dynamo compiled again and the script failed
# differently ("Recompilation triggered") or not at all. This installs bisect's wrapper through
# the runner's compile hook, as a bisect run does, and expects the script's own failure.
# expect: exit 0
import os
import sys
import tempfile
from pathlib import Path

import torch

from fxlens import config
from fxlens.bisect import backend as wrapper
from fxlens.capture.runner import patch_compile
from fxlens.trace.session import write_info


def scale(k):
    def f(x):
        return x * k

    return f


if __name__ == "__main__":
    session = tempfile.mkdtemp()
    write_info(Path(session), {"command": "run"})
    os.environ.update({"FXLENS_SESSION": session, config.ENV_BISECT_STAGE: "@asked"})
    patch_compile(wrapper.wrapper, __file__, session)
    f1 = torch.compile(scale(2), backend="aot_eager")
    f2 = torch.compile(scale(3), backend="aot_eager")
    x = torch.ones(3)
    f1(x)
    with torch.compiler.set_stance("default", skip_guard_eval_unsafe=True):
        y = f2(x)  # raised "Recompilation triggered" with one wrapper per call
    print("second closure returned", y.tolist())
    sys.exit(0 if torch.equal(y, x * 2) else 1)  # the first closure's graph, as without fxlens
