"""Shrink one of pytorch/tlparse's test logs for tests/data/tlparse/ (see README.md).

Drops torch's config dumps inside compilation metrics and, with --bulky, whole records whose payload
is generated code or a printed graph fxlens's compile-time and cache tests never read (inductor's
output code, the pre/post-grad and AOT graphs, fx_graph_runnable, tensor descriptions, Perfetto
events: only for logs whose compilation metrics hold their times, as the AOTInductor logs' do not).
Every record kept is torch's own text, byte for byte.
Usage: python trim.py [--bulky] LOG
"""

import json
import re
import sys
from pathlib import Path

BULKY = (
    "chromium_event",
    "describe_tensor",
    "describe_storage",
    "describe_source",
    "inductor_output_code",
    "inductor_post_grad_graph",
    "aot_inference_graph",
    "aot_forward_graph",
    "aot_backward_graph",
    "aot_joint_graph",
    "artifact:fx_graph_runnable",
    "artifact:before_pre_grad_graph",
    "artifact:after_pre_grad_graph",
    "artifact:before_post_grad_graph",
    "artifact:after_post_grad_graph",
)
DROP_METRICS = ("inductor_config", "dynamo_config", "functorch_config")


def _kind(meta: dict) -> str:
    keys = [k for k in meta if k not in ("frame_id", "frame_compile_id", "attempt", "has_payload", "rank")]
    keys = [k for k in keys if k != "compiled_autograd_id"]
    if not keys:
        return ""
    return "artifact:" + meta["artifact"]["name"] if keys[0] == "artifact" else keys[0]


def trim(path: Path, bulky: bool) -> None:
    out = []
    skipping = False  # inside the payload lines of a dropped record
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        if line.startswith("\t"):
            if not skipping:
                out.append(line)
            continue
        m = re.search(r"\{.*", line)
        meta = json.loads(m.group(0)) if m else {}
        skipping = bulky and _kind(meta) in BULKY
        if skipping:
            continue
        for key in ("compilation_metrics", "bwd_compilation_metrics"):
            if isinstance(meta.get(key), dict) and any(k in meta[key] for k in DROP_METRICS):
                for k in DROP_METRICS:
                    meta[key].pop(k, None)
                line = line[: m.start()] + json.dumps(meta) + "\n"
        out.append(line)
    path.write_text("".join(out), encoding="utf-8")


if __name__ == "__main__":
    trim(Path(sys.argv[-1]), "--bulky" in sys.argv)
