# fxlens corpus case: a fixed bug kept as a regression test (DESIGN.md style rule 11; issue 12.1).
# One LayerNorm used twice with a graph break between, one training step. `fxlens bisect` said
# "eager fails ... Dynamo's capture, graph 1/0" (grad err 0.33 vs fp64) on this correct script:
# the second graph's input is the first graph's output, and the compiled side's gradient went on
# through that history while the reference's stopped at a fresh leaf. This runs the bisect
# wrapper backend in-process with the fxlens_eager stage and fails if any graph's check fails.
# expect: exit 0
import json
import os
import sys
import tempfile

import torch

from fxlens.bisect import backend as wrapper


class Repro(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = torch.nn.LayerNorm(16)

    def forward(self, x):
        y = self.ln(x)
        print("graph break")
        return self.ln(y + x)


if __name__ == "__main__":
    session = tempfile.mkdtemp()
    os.environ.update(
        FXLENS_SESSION=session, FXLENS_BISECT_STAGE="fxlens_eager", FXLENS_BISECT_CHECK="accuracy"
    )
    torch.manual_seed(0)
    x = torch.randn(4, 16, requires_grad=True)
    torch.compile(Repro(), backend=wrapper.wrapper)(x).sum().backward()
    events = [json.loads(line) for line in open(os.path.join(session, "events.jsonl"))]
    checks = [e for e in events if e.get("phase") == "check"]
    bad = [e for e in checks if not e["ok"]]
    if len(checks) != 2 or bad:
        print("fxlens-signature: AccuracyError: per-graph check fails a correct graph", file=sys.stderr)
        sys.exit(1)
    print("ok")
