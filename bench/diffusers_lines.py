"""Dynamo's seconds by source line on diffusers models from tiny configs: whose lines they are.

For each model (diffusers' UNet2DConditionModel with cross-attention, and DiTTransformer2DModel,
both from tiny configs, one forward, backend="eager" so Dynamo's time is the compile time), two
runs under `fxlens run`, one with the attribution on and one with it off (FXLENS_COMPILE_LINES=0):

- the top lines by self seconds, each with the package that owns its file (diffusers: the model's
  own code; torch: torch.nn's layers it calls);
- the shares of every line summed, and the measured parts (traced lines, output graph, torch's
  build_guards) summed, against torch's Dynamo time (compilation_metrics: frame less backend);
- Dynamo's seconds with the attribution on and off (one run each: under load, a rough overhead).

`python bench/diffusers_lines.py [--models unet,dit] [--write] [--json FILE] [--from-json FILE]`
(needs diffusers: `pip install --no-deps diffusers`, bench only)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEADING = "Compile time by source line on diffusers models (compiletime, 2026-12-08)"
TOP = 8


def _unet():
    import torch
    from diffusers import UNet2DConditionModel

    model = UNet2DConditionModel(
        sample_size=16, in_channels=4, out_channels=4, layers_per_block=1, block_out_channels=(32, 64),
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=32, attention_head_dim=8, norm_num_groups=8,
    ).eval()  # fmt: skip
    compiled = torch.compile(model, backend="eager")
    x, t, text = torch.randn(1, 4, 16, 16), torch.tensor([10]), torch.randn(1, 7, 32)
    return lambda: compiled(x, t, encoder_hidden_states=text)


def _dit():
    import torch
    from diffusers import DiTTransformer2DModel

    model = DiTTransformer2DModel(
        num_attention_heads=2, attention_head_dim=16, in_channels=4, out_channels=4, num_layers=4,
        sample_size=8, patch_size=2, num_embeds_ada_norm=10, norm_num_groups=8,
    ).eval()  # fmt: skip
    compiled = torch.compile(model, backend="eager")
    x, t, label = torch.randn(1, 4, 8, 8), torch.tensor([5]), torch.tensor([3])
    return lambda: compiled(x, timestep=t, class_labels=label)


MODELS = {"unet": _unet, "dit": _dit}


def child(name: str) -> None:
    import torch

    torch.manual_seed(0)
    call = MODELS[name]()
    with torch.no_grad():
        call()


def _load() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def _owner(file: str) -> str:
    """The package whose file it is: diffusers (the model's own code), torch, or this bench."""
    for pkg in ("diffusers", "torch", "transformers"):
        if f"/{pkg}/" in file:
            return pkg
    return "bench" if file.endswith("diffusers_lines.py") else "other"


def one_run(name: str, on: bool, tmp: Path) -> dict:
    out = tmp / f"{name}-{on}.json"
    env = {**os.environ, "FXLENS_COMPILE_LINES": "1" if on else "0"}
    load0, t0 = _load(), time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "fxlens.cli", "run", "--session", str(out.with_suffix("")), "--json", str(out),
         __file__, "child", name],
        capture_output=True, text=True, env=env, timeout=1800,
    )  # fmt: skip
    if proc.returncode != 0:
        raise SystemExit(f"{name}: fxlens run failed:\n{proc.stderr[-2000:]}")
    report = json.loads(out.read_text())
    per = report["compile_times"]["per_compile"]
    return {
        "dynamo_s": sum(p["dynamo_s"] or 0 for p in per),
        "compiles": len(per),
        "graphs": len(report["graphs"]),
        "breaks": sum(b["count"] for b in report["graph_breaks"]),
        "wall_s": time.perf_counter() - t0,
        "load": (load0 + _load()) / 2,
        "compile_lines": report["compile_lines"] if on else None,
    }


def summarize(on: dict) -> dict:
    """Shares summed, by owner, and the top lines of one attributed run."""
    sec = on["compile_lines"]
    lines = [dict(ln, file=f["file"], function=f["function"]) for f in sec["functions"] for ln in f["lines"]]
    by_owner: dict[str, float] = {}
    for f in sec["functions"]:
        by_owner[_owner(f["file"])] = by_owner.get(_owner(f["file"]), 0.0) + f["self_s"]
    top = sorted(lines, key=lambda ln: -ln["self_s"])[:TOP]
    return {
        "dynamo_s": sec["dynamo_s"],
        "lines_s": round(sum(ln["self_s"] for ln in lines), 6),
        "measured_s": sec["measured_s"],
        "parts_s": sec["parts_s"],
        "by_owner": by_owner,
        "headline": sec.get("headline"),
        "top": [{k: ln[k] for k in ("file", "line", "function", "self_s", "share", "hits")} for ln in top],
    }


def render(results: dict) -> str:
    out = [
        '(Measured with `--json FILE`, written with `--from-json FILE --write`.) `fxlens run` on each model (tiny configs, one forward under `torch.no_grad()`, backend="eager": '
        "Dynamo's time is the compile time), once with the attribution on and once off "
        "(FXLENS_COMPILE_LINES=0). Load: the 1-minute load average during each run, on a 2-core machine "
        "shared with other jobs.",
        "",
        "| model | compiles | Dynamo s (torch) | lines' shares summed | measured parts / torch | "
        "diffusers' lines | torch's lines | Dynamo s on / off | load on / off |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in results.items():
        s, on, off = r["summary"], r["on"], r["off"]
        total = s["dynamo_s"] or 1.0
        own = s["by_owner"]
        out.append(
            f"| {name} | {on['compiles']} | {total:.2f} | {s['lines_s'] / total:.0%} | {s['measured_s'] / total:.0%} | "
            f"{own.get('diffusers', 0) / total:.0%} | {own.get('torch', 0) / total:.0%} | "
            f"{on['dynamo_s']:.2f} / {off['dynamo_s']:.2f} ({on['dynamo_s'] / off['dynamo_s'] - 1:+.0%}) | "
            f"{on['load']:.1f} / {off['load']:.1f} |"
        )
    for name, r in results.items():
        s = r["summary"]
        out += ["", f"**{name}**: {s['headline'] or 'no loop or line holds half of Dynamo s'}.", ""]
        out += ["| line | owner | function | self s | share | hits |", "|---|---|---|---|---|---|"]
        for ln in s["top"]:
            short = ln["file"].split("/site-packages/")[-1]
            out.append(
                f"| `{short}:{ln['line']}` | {_owner(ln['file'])} | {ln['function']} | {ln['self_s']:.2f} | "
                f"{ln['share']:.0%} | {ln['hits']} |"
            )
        parts = ", ".join(f"{k.replace('_', ' ')} {v:.2f} s" for k, v in s["parts_s"].items())
        out += ["", f"Parts of torch's {s['dynamo_s']:.2f} s: {parts}."]
    return "\n".join(out)


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "child":
        child(sys.argv[2])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="unet,dit")
    parser.add_argument("--write", action="store_true", help="write the section of BENCHMARKS.md")
    parser.add_argument("--json", metavar="FILE", help="also write the raw results")
    parser.add_argument("--from-json", metavar="FILE", help="render earlier raw results instead")
    args = parser.parse_args()
    if args.from_json:
        results = json.loads(Path(args.from_json).read_text())
    else:
        results = {}
        with tempfile.TemporaryDirectory(prefix="fxlens-diffusers-") as tmp:
            for m in args.models.split(","):
                on = one_run(m, True, Path(tmp))
                off = one_run(m, False, Path(tmp))
                results[m] = {"on": on, "off": off, "summary": summarize(on)}
                print(
                    f"  {m}: Dynamo {on['dynamo_s']:.2f} s on, {off['dynamo_s']:.2f} s off", file=sys.stderr
                )
                if args.json:
                    Path(args.json).write_text(json.dumps(results, indent=1))
    text = render(results)
    print(text)
    if args.write:
        from benchmarks_md import write_section

        write_section(HEADING, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
