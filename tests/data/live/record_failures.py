"""Record failures.log.gz here: `python record_failures.py` (writes the trace under TORCH_TRACE=./trace).

A compile that fails in its backend (torch falls back to eager: suppress_errors) and a frame that hits
the recompile limit (2) on new sizes, so the live follower's failure and limit events are checked
against a real trace (tests/live/test_follow.py).
"""

import gzip
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _record() -> None:
    import torch

    torch._dynamo.config.suppress_errors = True
    torch._dynamo.config.recompile_limit = 2

    def broken_backend(gm, example_inputs):
        raise RuntimeError("this backend cannot compile anything")

    def fails(x):
        return x.sin() + 1

    torch.compile(fails, backend=broken_backend)(torch.randn(4))

    def sizes(x):
        return x.cos() * 2

    limited = torch.compile(sizes, backend="eager", dynamic=False)
    for n in (2, 3, 4, 5):
        limited(torch.randn(n))


if __name__ == "__main__":
    if os.environ.get("TORCH_TRACE"):
        _record()
    else:
        trace = HERE / "trace"
        shutil.rmtree(trace, ignore_errors=True)
        subprocess.run([sys.executable, __file__], env={**os.environ, "TORCH_TRACE": str(trace)}, check=True)
        (log,) = trace.glob("*.log")
        (HERE / "failures.log.gz").write_bytes(gzip.compress(log.read_bytes(), mtime=0))
        shutil.rmtree(trace)
