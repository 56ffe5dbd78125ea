"""What checking every payload against torch's md5 costs the reader (issue 32).

    python bench/scan_checksum.py [--log LOG] [--mb 100] [--write]

Without --log, tlparse's multi_rank_logs rank-1 input (tests/data/tlparse, trimmed) is repeated
until it passes --mb. `fxlens.trace.reader.scan_log` reads it in this process, best of 3, with the
check and with the check stubbed out; CPU time (process_time) and wall time, and the load average.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from benchmarks_md import write_section  # noqa: E402

from fxlens.trace import reader  # noqa: E402

SOURCE = (
    HERE.parent / "tests" / "data" / "tlparse" / "multi_rank_logs" / "dedicated_log_torch_trace_rank_1.log"
)


def _best(path: Path, n: int = 3) -> tuple[float, float]:
    runs = []
    for _ in range(n):
        c0, w0 = time.process_time(), time.time()
        reader.scan_log(path)
        runs.append((time.process_time() - c0, time.time() - w0))
    return min(runs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--log")
    ap.add_argument("--mb", type=float, default=100)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        path = Path(args.log) if args.log else Path(d) / "big.log"
        if not args.log:
            chunk = SOURCE.read_bytes()
            with open(path, "wb") as f:
                for _ in range(int(args.mb * 2**20 / len(chunk)) + 1):
                    f.write(chunk)
        mb = path.stat().st_size / 2**20
        load0 = os.getloadavg()[0]
        on = _best(path)
        opened = reader._Checksum.open
        reader._Checksum.open = lambda self, line, no: None  # the check stubbed out
        try:
            off = _best(path)
        finally:
            reader._Checksum.open = opened
        load1 = os.getloadavg()[0]
    text = f"""Every payload is checked against the md5 torch logged with it (`has_payload`), the payloads of
records the reader skips too. `scan_log` in-process on a {mb:.0f} MB log, best of 3, with the
check and with it stubbed out; {time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}, load average
{load0:.1f} before and {load1:.1f} after on the shared box (walls grow with the load; CPU times compare).

| scan of {mb:.0f} MB | CPU s | wall s |
|---|---|---|
| with checksums | {on[0]:.2f} | {on[1]:.2f} |
| without | {off[0]:.2f} | {off[1]:.2f} |

The payload lines are kept as read and hashed once per payload (C speed); a log whose line ends
were converted to CRLF fails the first hash and is hashed again without the CRs.
"""
    print(text)
    if args.write:
        write_section("Reading: payload checksums (issue 32)", text)


if __name__ == "__main__":
    main()
