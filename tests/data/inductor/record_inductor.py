"""Record the inductor traces in this folder (torch 2.13, CPU, provenance tracking on).

    python tests/data/inductor/record_inductor.py

`fused.log.gz`: `f` compiled by inductor as torch does by default (one fused, vectorised C++ kernel).
`scalar.log.gz`: the same script with `options={"cpp.simdlen": 1}`: the same Dynamo graph and kernel
name, but inductor writes other (unvectorised) code, so another output file. A rank with the second
log and ranks with the first compiled the same graphs and differ only in inductor's output
(tests/ranks, tests/report, tests/tui).
"""

import gzip
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPT = """
import sys
import torch

def f(x):
    y = x.sin() * 2
    return y.cos() + 1

opts = {"cpp.simdlen": 1} if sys.argv[1] == "scalar" else {}
torch.compile(f, backend="inductor", options=opts)(torch.randn(8))
"""


def record(variant: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "inductor_case.py"
        script.write_text(SCRIPT)
        env = {
            **os.environ,
            "TORCH_TRACE": f"{tmp}/trace",
            "INDUCTOR_PROVENANCE": "1",
            "TORCHINDUCTOR_CACHE_DIR": f"{tmp}/cache",
        }
        subprocess.run([sys.executable, str(script), variant], env=env, check=True, timeout=1800)
        (log,) = Path(tmp, "trace").glob("*.log")
        # no temp folder names in the fixture (torch also prints them cut: "mp/tmpab12cd/...")
        text = log.read_text().replace(tmp, "/tmp/record").replace(Path(tmp).name, "record")
        (HERE / f"{variant}.log.gz").write_bytes(gzip.compress(text.encode(), mtime=0))
        shutil.rmtree(f"{tmp}/cache", ignore_errors=True)


if __name__ == "__main__":
    for v in sys.argv[1:] or ("fused", "scalar"):
        record(v)
