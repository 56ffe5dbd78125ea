"""Dynamo's seconds by source line on real models, and what measuring them costs.

For each model (a planted 300-layer loop; transformers' LlamaForCausalLM with 8 tiny layers, one
forward; T5ForConditionalGeneration tiny, `generate()`; a diffusers model when diffusers is
installed), compiled with backend="eager" so Dynamo's time is the compile time:

- `fxlens run` with the attribution on: the top lines, the loop headline, and how the measured
  parts (traced lines, output graph, torch's build_guards) sum against torch's Dynamo time
  (compilation_metrics: frame less backend), per model;
- overhead: the same script with the attribution on and off (FXLENS_COMPILE_LINES=0), alternated,
  `--rounds` each: torch's Dynamo seconds and the process CPU seconds of the compiled calls
  (CPU time moves less with the machine's load than wall time), and a load-free estimate: the
  wrapper's own cost per traced instruction (timed on a stub) times the instructions Dynamo stepped.

`python bench/compile_lines.py [--models loop,llama,t5,unet] [--rounds 3] [--pairs 6] [--write] [--json FILE]`
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEADING = "Compile time by source line"


# -- the child: one model compiled and run, under `fxlens run` -----------------------------------
def _loop():
    import torch

    class Stack(torch.nn.Module):
        def __init__(self, n=300):
            super().__init__()
            self.layers = torch.nn.ModuleList(torch.nn.Linear(4, 4) for _ in range(n))

        def forward(self, x):
            for layer in self.layers:
                x = torch.relu(layer(x))
            return x

    model = torch.compile(Stack(), backend="eager")
    x = torch.randn(2, 4)
    return lambda: model(x)


def _llama():
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=8,
                      num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=128, use_cache=False)
    model = LlamaForCausalLM(cfg).eval()
    compiled = torch.compile(model, backend="eager")
    ids = torch.randint(0, 256, (2, 32))
    return lambda: compiled(ids)


def _t5():
    import torch
    from transformers import T5Config, T5ForConditionalGeneration

    cfg = T5Config(vocab_size=256, d_model=64, d_ff=128, d_kv=16, num_layers=2, num_decoder_layers=2,
                   num_heads=4, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    model = T5ForConditionalGeneration(cfg).eval()
    model.compile(backend="eager")
    ids = torch.randint(2, 256, (1, 12))
    return lambda: model.generate(ids, max_new_tokens=6, do_sample=False, min_new_tokens=6)


def _unet():
    import torch
    from diffusers import UNet2DModel

    model = UNet2DModel(sample_size=16, in_channels=3, out_channels=3, layers_per_block=1,
                        block_out_channels=(32, 64), down_block_types=("DownBlock2D", "AttnDownBlock2D"),
                        up_block_types=("AttnUpBlock2D", "UpBlock2D"), norm_num_groups=8).eval()
    compiled = torch.compile(model, backend="eager")
    x, t = torch.randn(1, 3, 16, 16), torch.tensor([10])
    return lambda: compiled(x, t)


MODELS = {"loop": _loop, "llama": _llama, "t5": _t5, "unet": _unet}
NEEDS = {"llama": "transformers", "t5": "transformers", "unet": "diffusers"}


def child(name: str) -> None:
    import torch

    torch.manual_seed(0)
    call = MODELS[name]()
    cpu0, t0 = time.process_time(), time.perf_counter()
    with torch.no_grad():
        call()
    print("FXLENS_BENCH " + json.dumps({"cpu_s": time.process_time() - cpu0, "wall_s": time.perf_counter() - t0}))


def child_paired(name: str, pairs: int) -> None:
    """In one process: the same compile with the attribution on and off, alternated, `pairs` times;
    the compiling thread's CPU seconds of each (torch._dynamo.reset() before each compile)."""
    import torch

    from fxlens.capture import linetime

    torch.manual_seed(0)
    call = MODELS[name]()
    with torch.no_grad():
        call()  # the process's first compile pays one-time imports: not measured
        out = {"on": [], "off": []}
        for i in range(pairs):
            for on in ((True, False) if i % 2 == 0 else (False, True)):
                if on:
                    linetime.install(lambda payload: json.dumps(payload))  # the artifact's JSON, unwritten
                torch._dynamo.reset()
                c0 = time.thread_time()
                call()
                out["on" if on else "off"].append(time.thread_time() - c0)
                linetime.uninstall()
    print("FXLENS_BENCH " + json.dumps(out))


# -- the parent ---------------------------------------------------------------------------------
def _installed(name: str) -> bool:
    import importlib.util

    return name not in NEEDS or importlib.util.find_spec(NEEDS[name]) is not None


def _load() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def one_run(name: str, on: bool, tmp: Path) -> dict:
    out = tmp / f"{name}-{on}-{time.monotonic_ns()}.json"
    env = {**os.environ, "FXLENS_COMPILE_LINES": "1" if on else "0"}
    load0 = _load()
    proc = subprocess.run(
        [sys.executable, "-m", "fxlens.cli", "run", "--session", str(out.with_suffix("")), "--json", str(out),
         __file__, "child", name],
        capture_output=True, text=True, env=env, timeout=1800,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{name}: fxlens run failed:\n{proc.stderr[-2000:]}")
    report = json.loads(out.read_text())
    mine = next(json.loads(ln.split(" ", 1)[1]) for ln in proc.stdout.splitlines() if ln.startswith("FXLENS_BENCH "))
    per = report["compile_times"]["per_compile"]
    return {
        "dynamo_s": sum(p["dynamo_s"] or 0 for p in per),
        "compiles": len(per),
        "cpu_s": mine["cpu_s"],
        "load": (load0 + _load()) / 2,
        "compile_lines": report["compile_lines"] if on else None,
    }


def step_cost_s() -> float:
    """Seconds the step wrapper adds per traced instruction, timed on a stub translator."""
    from fxlens.capture import linetime

    class Tx:
        f_code = step_cost_s.__code__
        instruction_pointer = 3
        lineno = 10
        instructions: list = []

        def step(self):
            return True

    wrapped = linetime._timed_step(Tx.step)
    tx, n = Tx(), 200_000
    best = []
    for _ in range(5):
        linetime._windows.append(linetime._Window())
        t0 = time.perf_counter()
        for _ in range(n):
            wrapped(tx)
        t1 = time.perf_counter()
        for _ in range(n):
            Tx.step(tx)
        t2 = time.perf_counter()
        linetime._windows.pop()
        best.append(((t1 - t0) - (t2 - t1)) / n)
    return min(best)


def paired(name: str, pairs: int) -> dict:
    """The in-process paired overhead: CPU seconds per compile with the attribution on and off."""
    load0 = _load()
    proc = subprocess.run([sys.executable, __file__, "paired", name, str(pairs)], capture_output=True, text=True,
                          timeout=3600)
    if proc.returncode != 0:
        raise SystemExit(f"{name}: paired run failed:\n{proc.stderr[-2000:]}")
    out = next(json.loads(ln.split(" ", 1)[1]) for ln in proc.stdout.splitlines() if ln.startswith("FXLENS_BENCH "))
    ratios = sorted(a / b for a, b in zip(out["on"], out["off"]))
    print(f"  {name} paired: on {out['on']} off {out['off']}", file=sys.stderr)
    return {**out, "median_ratio": statistics.median(ratios), "load": (load0 + _load()) / 2}


def measure(name: str, rounds: int, tmp: Path, pairs: int) -> dict:
    runs = {True: [], False: []}
    for i in range(rounds):
        for on in ((True, False) if i % 2 == 0 else (False, True)):
            runs[on].append(one_run(name, on, tmp))
            print(f"  {name} on={on}: {runs[on][-1]['dynamo_s']:.2f} s Dynamo, load {runs[on][-1]['load']:.1f}",
                  file=sys.stderr)
    return {"on": runs[True], "off": runs[False], "paired": paired(name, pairs)}


def _med(xs):
    return statistics.median(xs) if xs else float("nan")


def _paired_cell(p: dict | None) -> str:
    if not p:
        return "-"
    return f"{_med(p['on']):.2f} / {_med(p['off']):.2f} s, median pair {p['median_ratio'] - 1:+.1%} ({len(p['on'])} pairs)"


def render(results: dict, rounds: int, per_step: float) -> str:
    out = [
        f"`fxlens run` on each model with backend=\"eager\" (Dynamo's time is the compile time), {rounds} runs with "
        "the attribution on and off, alternated. Load: the 1-minute load average during the runs, on a "
        "2-core machine shared with other jobs: wall times move with it, so the overhead is also given as "
        f"CPU seconds and as a load-free estimate (the wrapper's own cost, {per_step * 1e6:.2f} µs per traced "
        "instruction on a stub, times the instructions stepped, over the CPU seconds), and paired in one process: "
        "the same compile with the attribution on and off, alternated, on the compiling thread's CPU clock.",
        "",
        "| model | compiles | Dynamo s (torch) | measured / torch | top line (self share) | overhead: Dynamo s on/off "
        "| CPU s on/off | paired CPU, in one process | estimate | load |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    tops = []
    for name, r in results.items():
        on, off = r["on"], r["off"]
        sec = on[0]["compile_lines"]
        dyn_on, dyn_off = _med([x["dynamo_s"] for x in on]), _med([x["dynamo_s"] for x in off])
        cpu_on, cpu_off = _med([x["cpu_s"] for x in on]), _med([x["cpu_s"] for x in off])
        steps = sum(ln["steps"] for f in sec["functions"] for ln in f["lines"])
        top = sec["top_lines"][0]
        from fxlens.trace.userframes import shown_path as where

        out.append(
            f"| {name} | {on[0]['compiles']} | {sec['dynamo_s']:.2f} | {sec['measured_s'] / sec['dynamo_s']:.0%} "
            f"| `{where(top['file'])}:{top['line']}` {top['function']} ({top['share']:.0%}) "
            f"| {dyn_on:.2f} / {dyn_off:.2f} ({dyn_on / dyn_off - 1:+.0%}) "
            f"| {cpu_on:.2f} / {cpu_off:.2f} ({cpu_on / cpu_off - 1:+.0%}) "
            f"| {_paired_cell(r.get('paired'))} "
            f"| {steps * per_step / cpu_off:.1%} ({steps} steps) "
            f"| {min(x['load'] for x in on + off):.1f}-{max(x['load'] for x in on + off):.1f} |"
        )
        tops.append((name, sec))
    out.append("")
    for name, sec in tops:
        out.append(f"**{name}**: " + (sec.get("headline") or "no loop or line holds half of Dynamo's seconds") + ".")
        out.append("")
        out.append("| line | function | self s | share | incl s | hits |")
        out.append("|---|---|---|---|---|---|")
        from fxlens.trace.userframes import shown_path as where

        for ln in sec["top_lines"][:6]:
            out.append(
                f"| `{where(ln['file'])}:{ln['line']}` | {ln['function']} | {ln['self_s']:.2f} | {ln['share']:.0%} "
                f"| {ln['incl_s']:.2f} | {ln['hits']} |"
            )
        parts = ", ".join(f"{k.replace('_', ' ')} {v:.2f} s" for k, v in sec["parts_s"].items())
        out.append("")
        out.append(f"Parts of torch's {sec['dynamo_s']:.2f} s: {parts}.")
        out.append("")
    return "\n".join(out)


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "child":
        child(sys.argv[2])
        return 0
    if len(sys.argv) > 3 and sys.argv[1] == "paired":
        child_paired(sys.argv[2], int(sys.argv[3]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="loop,llama,t5,unet")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pairs", type=int, default=6, help="paired on/off compiles in one process")
    parser.add_argument("--write", action="store_true", help="write the section of BENCHMARKS.md")
    parser.add_argument("--json", metavar="FILE", help="also write the raw results (after each model)")
    parser.add_argument("--from-json", metavar="FILE", help="render earlier raw results instead")
    args = parser.parse_args()
    if args.from_json:
        data = json.loads(Path(args.from_json).read_text())
        results, per_step = data["results"], data["per_step_s"]
    else:
        per_step = step_cost_s()
        results = {}
        with tempfile.TemporaryDirectory(prefix="fxlens-lines-") as tmp:
            for m in args.models.split(","):
                if not _installed(m):
                    print(f"{m}: {NEEDS[m]} is not installed, skipped", file=sys.stderr)
                    continue
                results[m] = measure(m, args.rounds, Path(tmp), args.pairs)
                if args.json:
                    Path(args.json).write_text(json.dumps({"results": results, "per_step_s": per_step}, indent=1))
    text = render(results, args.rounds, per_step)
    print(text)
    if args.write:
        from benchmarks_md import write_section

        write_section(HEADING, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
