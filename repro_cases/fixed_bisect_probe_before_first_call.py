# fxlens corpus case: a fixed bug kept as a regression test (DESIGN.md style rule 11; issue 34).
# AOTAutograd checks custom ops' aliasing on a compiled graph's first call only. `fxlens bisect`'s
# accuracy check called each compiled graph once on copies before the user's call and dropped its
# exception, so the user's call (the second) passed: "nothing fails". It also judged scripts that
# never run backward on gradients. This runs bisect's wrapper backend in-process: the first-call
# failure reaches the script; a backend with wrong gradients passes a forward-only call and fails
# once the script differentiates.
# expect: exit 0
import itertools
import os
import sys
import tempfile
from pathlib import Path

import torch
import torch._functorch.config
from torch._dynamo.backends.common import aot_autograd

from fxlens import config
from fxlens.bisect import backend as wrapper
from fxlens.bisect.runs import read_outcome
from fxlens.trace.session import write_info

torch._functorch.config.error_on_custom_op_aliasing = True
lib = torch.library.Library("fxlens_repro_first_call", "DEF")
lib.define("flat(Tensor x) -> Tensor")  # declared functional, returns a view of its input
lib.impl("flat", lambda x: x.view(-1), "CPU")
torch.library.register_fake("fxlens_repro_first_call::flat", lambda x: x.new_empty(x.numel()), lib=lib)

doubled = aot_autograd(
    fw_compiler=lambda gm, _: gm.forward,
    bw_compiler=lambda gm, _: lambda *a: [None if g is None else g * 2 for g in gm(*a)],
)


def run(stage, fn, *args, backward=False):
    session = tempfile.mkdtemp()
    write_info(Path(session), {"command": "run"})
    os.environ.update({"FXLENS_SESSION": session, config.ENV_BISECT_STAGE: stage})
    os.environ[config.ENV_BISECT_CHECK] = "auto"
    wrapper._ordinals = itertools.count()
    torch._dynamo.reset()
    code = 0
    try:
        out = torch.compile(fn, backend=wrapper.for_asked(stage, doubled))(*args)
        if backward:
            out.sum().backward()
    except RuntimeError as e:
        print(f"{stage}: the script sees {str(e)[:80]}")
        code = 1
    return read_outcome(1, stage, Path(session), code, 0.0)


if __name__ == "__main__":
    first = run("aot_eager", lambda x: torch.ops.fxlens_repro_first_call.flat(x * 2) + 1, torch.randn(2, 4))
    print("first call:", first.kind, first.error[:80])
    linear = torch.nn.Linear(4, 2)
    forward_only = run("doubled", linear, torch.randn(3, 4))
    trained = run("doubled", linear, torch.randn(3, 4), backward=True)
    print("forward only:", forward_only.kind, "| with backward:", trained.kind, trained.divergence)
    ok = first.kind == "crash" and "must not also be an input" in first.error
    ok = ok and forward_only.kind is None
    ok = ok and trained.kind == "accuracy" and trained.divergence["what"].startswith("grad of input")
    sys.exit(0 if ok else 1)
