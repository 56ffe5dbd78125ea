"""A stand-in for a compiling job, for the live tests: writes recorded TORCH_TRACE logs (gzipped
fixtures) into $TORCH_TRACE in steps, as torch would while compiling, printing a line per step.

`python replay_trace.py LOG.gz [LOG.gz ...]`: each log is written under its own name (minus .gz).
"""

import gzip
import os
import sys
import time
from pathlib import Path


def main() -> None:
    out = Path(os.environ["TORCH_TRACE"])
    out.mkdir(parents=True, exist_ok=True)
    logs = [(out / Path(p).name[: -len(".gz")], gzip.decompress(Path(p).read_bytes())) for p in sys.argv[1:]]
    print("tty", sys.stdout.isatty(), sys.stderr.isatty(), flush=True)
    steps = 6
    for step in range(steps):
        for dest, data in logs:
            part = len(data) * step // steps, len(data) * (step + 1) // steps
            with open(dest, "ab") as f:
                f.write(data[part[0] : part[1]])
        print("step", step, flush=True)
        time.sleep(0.15)
    print("partial", end="", flush=True)
    time.sleep(0.3)  # an unfinished line: the status line waits for its end
    print(" line done", flush=True)
    print("warning on stderr", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
