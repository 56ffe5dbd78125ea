"""Shrink a recorded TORCH_TRACE log for tests/data/traces/ without changing what fxlens reads.

A log of record.py is ~460 KB, mostly torch's config dumps: each compilation_metrics record carries
`inductor_config`, `dynamo_config` and `functorch_config` (~34 KB per compile), and chromium_event
records (Perfetto timings) are skipped by fxlens's reader on their line prefix. Those are dropped;
every other record and field is torch's own text, byte for byte. Usage: python trim.py LOG [KIND...]
where each KIND (a record key, or an artifact's name) is dropped too, payload and all: tlparse's
inputs (tests/data/tlparse) drop the records no test there reads (see its README for which).
"""

import json
import re
import sys
from pathlib import Path

DROP_RECORDS = ("chromium_event",)
DROP_METRICS = ("inductor_config", "dynamo_config", "functorch_config")


def _kind(meta: dict) -> str:
    art = meta.get("artifact")
    return art.get("name", "") if isinstance(art, dict) else next(iter(meta), "")


def trim(path: Path, drop: tuple[str, ...] = ()) -> None:
    out = []
    skipping = False  # inside the payload lines of a dropped record
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        if line.startswith("\t"):
            if not skipping:
                out.append(line)
            continue
        m = re.search(r"\] (\{.*)", line)
        try:
            meta = json.loads(m.group(1)) if m else {}
        except ValueError:  # a line torch did not write (output mixed into the log): kept as is
            meta = {}
        skipping = any(k in meta for k in DROP_RECORDS) or (bool(meta) and _kind(meta) in drop)
        if skipping:
            continue
        for key in ("compilation_metrics", "bwd_compilation_metrics"):
            if isinstance(meta.get(key), dict) and any(k in meta[key] for k in DROP_METRICS):
                for k in DROP_METRICS:
                    meta[key].pop(k, None)
                line = line[: m.start(1)] + json.dumps(meta) + "\n"
        out.append(line)
    path.write_text("".join(out), encoding="utf-8")


if __name__ == "__main__":
    trim(Path(sys.argv[1]), tuple(sys.argv[2:]))
