"""One user line calls two library functions, in two files, and each breaks the graph the same way.

The two "libraries" are written to a folder named site-packages (where libraries live) at run time.
"""

import sys
import tempfile
from pathlib import Path

import torch

LIB = Path(tempfile.mkdtemp()) / "site-packages"
LIB.mkdir()
(LIB / "lib_enc.py").write_text(
    "import torch\n\n\ndef encode(x):\n    y = x.sin()\n    torch._dynamo.graph_break()\n    return y + 1\n"
)
(LIB / "lib_loss.py").write_text(
    "import torch\n\n\ndef loss(x):\n    y = x.cos()\n    torch._dynamo.graph_break()\n    return y.sum()\n"
)
sys.path.insert(0, str(LIB))

import lib_enc  # noqa: E402
import lib_loss  # noqa: E402


def step(x):
    return lib_enc.encode(x).sum() + lib_loss.loss(x)


c = torch.compile(step, backend="eager")
for _ in range(2):
    c(torch.randn(4))
