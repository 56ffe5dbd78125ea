"""A warm start explained, against a by-hand measurement: `fxlens doctor --warm` on a tiny HF Llama
script (inductor on CPU) says what the warm run still spends per part and what torch's portable
cache bundle gives a fresh process; by hand, two more processes share another private cache folder
(the first fills it, the second starts warm) and dump torch's own compilation metrics
(`torch._dynamo.utils.compilation_time_metrics`, the seconds of every `dynamo_timed` event).

    python bench/warm_start.py [--layers 2] [--json FILE]

Prints one table: each part of the warm start, doctor's figure (its warm run, from the log's timed
events) beside the by-hand process's (torch's in-process metrics), and the bundle run's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

SCRIPT = """
import torch
from transformers import LlamaConfig, LlamaForCausalLM

torch.manual_seed(0)
cfg = LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers={layers},
                  num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=128, use_cache=False)
model = LlamaForCausalLM(cfg).eval()
compiled = torch.compile(model)
ids = torch.randint(0, 256, (2, 32))
with torch.no_grad():
    for _ in range(3):
        compiled(ids)
"""

DUMP = """
import atexit, json, os

def _dump():
    from torch._dynamo.utils import compilation_time_metrics
    with open(os.environ["WARM_BENCH_METRICS"], "w") as f:
        json.dump({k: list(v) for k, v in compilation_time_metrics.items()}, f)

atexit.register(_dump)
"""

# by hand: the events of each part, by torch's own names (inclusive seconds of the outermost ones)
BY_HAND = {
    "dynamo tracing": ("bytecode_tracing",),
    "guard building": ("build_guards",),
    "cache keys": ("CacheBase.get_system.triton_key", "inductor_codecache_torch_key"),
    "kernel loading": ("PyCodeCache.load_by_key_path", "async_compile.wait", "async_compile.precompile"),
}


def _by_hand(script: Path, cache: Path, metrics: Path) -> dict:
    env = {
        **os.environ,
        "TORCHINDUCTOR_CACHE_DIR": str(cache / "inductor"),
        "TRITON_CACHE_DIR": str(cache / "triton"),
        "WARM_BENCH_METRICS": str(metrics),
    }
    subprocess.run([sys.executable, str(script)], env=env, check=True)
    got = json.loads(metrics.read_text())
    out = {part: sum(sum(got.get(n, [])) for n in names) for part, names in BY_HAND.items()}
    out["total"] = sum(got.get("_compile.compile_inner", []))  # the frame compile, outermost timed
    return out


def _load() -> str:
    return open("/proc/loadavg").read().split()[0] if os.path.exists("/proc/loadavg") else "?"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--json")
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="warm-bench-"))
    user = tmp / "llama_small.py"
    user.write_text(SCRIPT.format(layers=a.layers))
    timed = tmp / "llama_timed.py"
    timed.write_text(DUMP + SCRIPT.format(layers=a.layers))
    loads = [_load()]
    env = {**os.environ, "FXLENS_SESSIONS_DIR": str(tmp / "s")}
    d = tmp / "d.json"
    cmd = [sys.executable, "-m", "fxlens.cli", "doctor", "--warm", "--budget", "0", "--json", str(d), str(user)]
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    loads.append(_load())
    w = json.loads(d.read_text())["warm"]
    _by_hand(timed, tmp / "hand-cache", tmp / "cold.json")  # fills the by-hand cache
    hand = _by_hand(timed, tmp / "hand-cache", tmp / "warm.json")
    loads.append(_load())
    rows = []
    warm_parts, bundle = w["warm"]["parts"]["parts"], (w.get("bundle") or {})
    bundle_parts = (bundle.get("parts") or {}).get("parts", {})
    for part in (*BY_HAND, "total"):
        mine = w["warm"]["parts"]["total_s"] if part == "total" else warm_parts.get(part, 0.0)
        b = bundle.get("parts", {}).get("total_s") if part == "total" else bundle_parts.get(part, 0.0)
        rows.append({"part": part, "doctor_warm_s": mine, "by_hand_warm_s": hand[part], "bundle_s": b})
    result = {
        "layers": a.layers,
        "cold_compile_s": w["cold"]["compile_s"],
        "warm_compile_s": w["warm"]["compile_s"],
        "bundle_compile_s": bundle.get("compile_s"),
        "bundle_load_s": bundle.get("load_s"),
        "bundle_bytes": bundle.get("bundle_bytes"),
        "doctor_warm_other_parts": {k: v for k, v in warm_parts.items() if k not in BY_HAND},
        "rows": rows,
        "load": loads,
    }
    # the shares: the two warm processes ran at different loads, so their seconds differ by a factor
    mine_t, hand_t = rows[-1]["doctor_warm_s"] or 1.0, rows[-1]["by_hand_warm_s"] or 1.0
    print("| part | doctor, warm run: s (share) | by hand, warm process: s (share) | doctor, bundle run: s |")
    print("|---|---|---|---|")
    for r in rows:
        b = "-" if r["bundle_s"] is None else f"{r['bundle_s']:.2f}"
        share = r["part"] != "total"
        mine = f"{r['doctor_warm_s']:.2f}" + (f" ({r['doctor_warm_s'] / mine_t:.0%})" if share else "")
        hand = f"{r['by_hand_warm_s']:.2f}" + (f" ({r['by_hand_warm_s'] / hand_t:.0%})" if share else "")
        print(f"| {r['part']} | {mine} | {hand} | {b} |")
    print(json.dumps({k: v for k, v in result.items() if k != "rows"}))
    if a.json:
        Path(a.json).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
