# fxlens corpus case: fixed bugs kept as regression tests (DESIGN.md style rule 11; issue 34).
# 1. A backend returning int64 where eager returns int8 (equal values) passed bisect's check and
#    minify's accuracy rule: "no compiled graph raised or diverged". Both now check the dtype.
# 2. minify saved a tensor-subclass input with torch.save and read it back with weights_only=True:
#    "internal error: UnpicklingError" (the script's class is not an allowed global). Plain-data
#    subclasses are saved as their data; wrapper subclasses are refused with a reason.
# expect: exit 0
import itertools
import os
import sys
import tempfile
from pathlib import Path

import torch
from torch.testing._internal.two_tensor import TwoTensor

from fxlens import config
from fxlens.bisect import backend as wrapper
from fxlens.bisect.runs import read_outcome
from fxlens.capture.accuracy import accuracy_failure
from fxlens.minify.capture import _save_values
from fxlens.trace.session import write_info


def int64_outputs(gm, example_inputs):
    return lambda *a: [o.to(torch.int64) if o.dtype == torch.int8 else o for o in gm(*a)]


def quantize(x):
    return (x * 10).round().clamp(-128, 127).to(torch.int8)


class Tagged(torch.Tensor):
    pass


if __name__ == "__main__":
    session = tempfile.mkdtemp()
    write_info(Path(session), {"command": "run"})
    os.environ.update({"FXLENS_SESSION": session, config.ENV_BISECT_STAGE: "int64_outputs"})
    os.environ[config.ENV_BISECT_CHECK] = "auto"
    wrapper._ordinals = itertools.count()
    q = torch.compile(quantize, backend=wrapper.for_asked("int64_outputs", int64_outputs))(torch.randn(8))
    out = read_outcome(1, "int64_outputs", Path(session), 0, 0.0)
    print("bisect:", out.kind, out.error)
    x = torch.randn(8)
    rule = accuracy_failure(quantize(x.double()), quantize(x), quantize(x).to(torch.int64))
    print("minify rule:", rule)
    folder = Path(tempfile.mkdtemp())
    unsaved = _save_values(
        folder, 0, [torch.ones(3).as_subclass(Tagged), TwoTensor(torch.ones(2), torch.ones(2))], []
    )
    values = torch.load(folder / "values_0.pt", weights_only=True)
    print("saved:", sorted(values), "unsaved:", unsaved)
    ok = (
        q.dtype == torch.int64
        and out.kind == "accuracy"
        and "dtype int64 where eager's has int8" in out.error
    )
    ok = ok and rule is not None and "dtype" in rule
    ok = (
        ok
        and sorted(values) == ["arg0"]
        and type(values["arg0"]) is torch.Tensor
        and "TwoTensor" in unsaved["arg1"]
    )
    sys.exit(0 if ok else 1)
