# fxlens corpus case: a fixed bug kept as a regression test.
# pytorch/pytorch#185497's shape: a compiled function interpolates a slice of its (non-leaf) input,
# then normalises the input in place (`x.sub_(mean).div_(std)`). The aot_eager run of the script
# passes, but `fxlens bisect` said "accuracy first at stage aot_eager: grad of input 1 () max abs
# err inf": eager's autograd answers None for mean's gradient through the slice (no path reaches
# it), the AOT graph answers zeros. This runs the bisect wrapper in-process with the aot_eager
# stage and fails if any graph's check fails.
# expect: exit 0
import json
import os
import sys
import tempfile

import torch
import torch.nn.functional as F

from fxlens.bisect import backend as wrapper


def f(x, mean, std):
    y = F.interpolate(x[:, :8, :8].unsqueeze(0), size=(4, 4), mode="bilinear", align_corners=False)
    x.sub_(mean).div_(std)
    return y, x


if __name__ == "__main__":
    session = tempfile.mkdtemp()
    os.environ.update(FXLENS_SESSION=session, FXLENS_BISECT_STAGE="aot_eager", FXLENS_BISECT_CHECK="accuracy")
    torch.manual_seed(0)
    base = torch.randn(1, 3, 16, 16, requires_grad=True)
    x = (base * 1.0).squeeze(0)
    mean = torch.randn(3, 1, 1, requires_grad=True)
    std = torch.randn(3, 1, 1).abs().add(0.5).requires_grad_()
    y, z = torch.compile(f, backend=wrapper.wrapper)(x, mean, std)
    (y.sum() + z.sum()).backward()
    events = [json.loads(line) for line in open(os.path.join(session, "events.jsonl"))]
    checks = [e for e in events if e.get("phase") == "check"]
    bad = [e for e in checks if not e["ok"]]
    if len(checks) != 1 or bad:
        print("fxlens-signature: AccuracyError: per-graph check fails a correct graph", file=sys.stderr)
        sys.exit(1)
    print("ok")
