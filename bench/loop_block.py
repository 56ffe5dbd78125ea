"""The per-block cost of a repeated block: from the line-time attribution vs a by-hand regional compile.

For each model (the planted 300-layer loop over nn.Linear; transformers' LlamaForCausalLM with 8
tiny layers), compiled whole with backend="eager" (Dynamo's time is the compile time):

- attribution: `fxlens run --json` of the whole-model compile; the block's `forward` row in
  `compile_lines.functions` (found by its code's file and first line, from inspect): its inclusive
  seconds over the times Dynamo entered it = Dynamo's seconds tracing one block inlined. The
  `unrolled_loop` finding's `block_s` is the same figure when the loop dominates.
- by hand, a fresh interpreter: one instance of the block compiled alone
  (`block.forward = torch.compile(block.forward, backend="eager")`), the model run once, twice
  (`torch._dynamo.reset()` between): cold (the process's first compile, with its one-time costs)
  and warm. torch's compilation metrics of that frame (Dynamo seconds: the frame less the
  backend) and its `bytecode_tracing` time (tracing alone, the part the attribution measures).

`python bench/loop_block.py [--models loop,llama] [--rounds 2] [--write]`
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEADING = "Per-block compile cost: attribution vs one block compiled by hand (loops, 2026-12-07)"

MODELS = {
    "loop": """
import torch
class Stack(torch.nn.Module):
    def __init__(self, n=300):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(4, 4) for _ in range(n))
    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x
torch.manual_seed(0)
model, args, block_cls = Stack(), (torch.randn(2, 4),), torch.nn.Linear
""",
    "llama": """
import torch
from transformers import LlamaConfig, LlamaForCausalLM
from transformers.models.llama.modeling_llama import LlamaDecoderLayer
cfg = LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=8,
                  num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=128, use_cache=False)
torch.manual_seed(0)
model, args, block_cls = LlamaForCausalLM(cfg).eval(), (torch.randint(0, 256, (2, 32)),), LlamaDecoderLayer
""",
}

WHOLE = """
with torch.no_grad():
    torch.compile(model, backend="eager")(*args)
import inspect
code = inspect.unwrap(block_cls.forward).__code__
print("FXLENS_BLOCK " + __import__("json").dumps([block_cls.__name__, code.co_filename, code.co_firstlineno]))
"""

ONE_BLOCK = """
from torch._dynamo import utils
block = next(m for m in model.modules() if isinstance(m, block_cls))
out = []
for attempt in ("cold", "warm"):  # the process's first compile pays one-time costs; then the same again
    torch._dynamo.reset()
    block.forward = torch.compile(block_cls.forward.__get__(block), backend="eager")
    with torch.no_grad():
        model(*args)
    del block.forward
    m = utils.get_compilation_metrics()[-1]
    out.append({"dynamo_s": m.entire_frame_compile_time_s - (m.backend_compile_time_s or 0),
                "tracing_s": sum(utils.compilation_time_metrics.get("bytecode_tracing", []))})
print("FXLENS_ONE " + __import__("json").dumps(out))
"""


def _whole(name: str, tmp: Path, i: int) -> dict:
    script = tmp / f"{name}_whole.py"
    script.write_text(MODELS[name] + WHOLE)
    out = tmp / f"{name}-{i}.json"
    proc = subprocess.run([sys.executable, "-m", "fxlens.cli", "run", "--session", str(tmp / f"s-{name}-{i}"),
                           "--json", str(out), str(script)], capture_output=True, text=True, cwd=tmp,
                          env={**os.environ, "FXLENS_SESSIONS_DIR": str(tmp / "sessions")}, check=True)  # fmt: skip
    cls, file, line = json.loads(proc.stdout.split("FXLENS_BLOCK ", 1)[1].splitlines()[0])
    sec = json.loads(out.read_text())["compile_lines"]
    row = next(f for f in sec["functions"] if f["file"] == file and f["first_line"] == line)
    first = next(ln for ln in row["lines"] if ln["line"] == line)
    loop = sec.get("unrolled_loop") or {}
    return {"class": cls, "calls": first["hits"], "block_s": row["incl_s"] / first["hits"],
            "dynamo_s": sec["dynamo_s"], "loop_block_s": loop.get("block_s"), "loop_class": loop.get("block_class")}  # fmt: skip


def _one_block(name: str, tmp: Path, i: int) -> dict:
    script = tmp / f"{name}_one.py"
    script.write_text(MODELS[name] + ONE_BLOCK)
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp, check=True, capture_output=True, text=True)
    cold, warm = json.loads(proc.stdout.split("FXLENS_ONE ", 1)[1].splitlines()[0])
    return {"cold": cold, "warm": warm}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="loop,llama")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for name in a.models.split(","):
            whole = [_whole(name, tmp, i) for i in range(a.rounds)]
            one = [_one_block(name, tmp, i) for i in range(a.rounds)]
            med = statistics.median
            row = {
                "model": name,
                "class": whole[0]["class"],
                "calls": whole[0]["calls"],
                "attributed_ms": 1000 * med(w["block_s"] for w in whole),
                # the loop dominates (share >= 0.5) in some rounds only when it is near the line
                "loop_block_ms": [1000 * w["loop_block_s"] for w in whole if w["loop_block_s"] is not None],
                **{f"{k}_{t}_ms": 1000 * med(o[k][f"{t}_s"] for o in one)
                   for k in ("cold", "warm") for t in ("tracing", "dynamo")},
                "rounds": a.rounds,
                "load": Path("/proc/loadavg").read_text().split()[0],
            }  # fmt: skip
            rows.append(row)
            print(json.dumps(row))
    if a.write:
        _write(rows)


def _write(rows: list[dict]) -> None:
    table = [
        "| model | block | calls traced | attributed per call (ms) | `unrolled_loop.block_s` (ms) | one block by hand, warm: tracing / Dynamo (ms) | cold: tracing / Dynamo (ms) | load |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        got = r["loop_block_ms"]
        lb = f"{statistics.median(got):.1f} ({len(got)} of {r['rounds']} runs)" if got else "- (loop under half)"
        table.append(f"| {r['model']} | {r['class']} | {r['calls']} | {r['attributed_ms']:.1f} | {lb} | "
                     f"{r['warm_tracing_ms']:.1f} / {r['warm_dynamo_ms']:.1f} | {r['cold_tracing_ms']:.1f} / {r['cold_dynamo_ms']:.1f} | {r['load']} |")  # fmt: skip
    text = "\n".join(table) + "\n"
    print(text)
    from benchmarks_md import BENCHMARKS, _section, write_section, write_table

    if _section(BENCHMARKS.read_text(), HEADING):  # the section's prose (its reading) stays
        write_table(HEADING, text)
    else:
        write_section(HEADING, INTRO + "\n" + text)


INTRO = (
    "The block's cost from the line-time attribution of a whole-model compile (backend eager: its "
    "`forward`'s inclusive seconds over the calls Dynamo traced; `unrolled_loop.block_s` where the "
    "loop dominates) against one instance of the block compiled alone by hand in a fresh interpreter, "
    "cold (the process's first compile) and warm (again, after `torch._dynamo.reset()`): torch's "
    "`bytecode_tracing` seconds (tracing alone) and its Dynamo seconds (frame less backend). Medians of "
    "the rounds; load: the 1-minute load average on a 2-core machine shared with other jobs.\n"
)


if __name__ == "__main__":
    main()
