"""Regional compilation measured: compile the whole model vs each repeated block, by hand.

For a 12-layer tiny Llama (transformers LlamaForCausalLM, random weights) and a 12-layer tiny ViT
(ViTForImageClassification), both under inductor on this machine's device:

- cold compile: the first call's wall time in a fresh process with an empty, private cache folder
  (TORCHINDUCTOR_CACHE_DIR, TRITON_CACHE_DIR), whole (`torch.compile(model)`) vs regional (`for
  block in blocks: block.compile()`), alternated, `--rounds` each; fxlens reads each run's
  TORCH_TRACE for torch's compile seconds, the number of compiles and the repeated block it names;
- steady state: one process holds both versions (same weights), warms them, then times interleaved
  (whole, regional) call pairs; the speed ratio's 95% interval is fxlens doctor's paired bootstrap;
- cold vs warm: the whole model compiled again in a fresh process with the cache the cold run
  filled: first-call seconds and the cache hits torch logged.

`python bench/regional.py [--models llama,vit] [--rounds 2] [--pairs 40] [--write]`
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BLOCKS = {"llama": "model.layers", "vit": "vit.layers"}


# -- the child: one measurement in a fresh process -------------------------------------------------
def _model(name: str):
    import torch

    torch.manual_seed(0)
    if name == "llama":
        from transformers import LlamaConfig, LlamaForCausalLM

        cfg = LlamaConfig(
            vocab_size=256,
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=12,
            num_attention_heads=4,
            num_key_value_heads=4,
            max_position_embeddings=128,
            # no KV cache: each decoder layer reads its own cache entry (`cache.layers[i]`), a Python
            # value Dynamo guards on, so a regionally compiled layer recompiles per layer (fxlens
            # report names it) and stops at the recompile limit; one forward needs no cache
            use_cache=False,
        )
        return LlamaForCausalLM(cfg).eval(), (torch.randint(0, 256, (2, 32)),)
    from transformers import ViTConfig, ViTForImageClassification

    cfg = ViTConfig(
        hidden_size=64,
        num_hidden_layers=12,
        num_attention_heads=4,
        intermediate_size=128,
        image_size=32,
        patch_size=8,
        num_labels=10,
    )
    return ViTForImageClassification(cfg).eval(), (torch.randn(2, 3, 32, 32),)


def _blocks(model, name: str):
    obj = model
    for part in BLOCKS[name].split("."):
        obj = getattr(obj, part)
    return obj


def _compiled(model, name: str, mode: str):
    import torch

    if mode == "whole":
        return torch.compile(model)
    for block in _blocks(model, name):
        block.compile()
    return model


def _device():
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _sync():
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def child_cold(name: str, mode: str) -> dict:
    import torch

    model, inputs = _model(name)
    dev = _device()
    model, inputs = model.to(dev), tuple(x.to(dev) for x in inputs)
    with torch.no_grad():
        fn = _compiled(model, name, mode)
        _sync()
        t0 = time.perf_counter()
        fn(*inputs)
        _sync()
        first = time.perf_counter() - t0
    return {"first_call_s": first}


def child_steady(name: str, pairs: int) -> dict:
    import copy

    import torch

    base, inputs = _model(name)
    dev = _device()
    base, inputs = base.to(dev), tuple(x.to(dev) for x in inputs)
    whole = _compiled(copy.deepcopy(base), name, "whole")
    regional = _compiled(copy.deepcopy(base), name, "regional")
    out = []
    with torch.no_grad():
        a, b = whole(*inputs), regional(*inputs)
        la, lb = a.logits, b.logits
        same = bool(torch.allclose(la, lb, atol=1e-4, rtol=1e-4))
        for _ in range(5):  # warm both
            whole(*inputs)
            regional(*inputs)
        for i in range(pairs):
            order = (("w", whole), ("r", regional)) if i % 2 == 0 else (("r", regional), ("w", whole))
            t = {}
            for tag, fn in order:
                _sync()
                t0 = time.perf_counter()
                fn(*inputs)
                _sync()
                t[tag] = (time.perf_counter() - t0) * 1e3
            out.append((t["w"], t["r"]))
    return {"pairs": out, "outputs_close": same}


# -- the parent -------------------------------------------------------------------------------------
def _run_child(args: list[str], cache: Path, trace: Path | None) -> dict:
    env = {
        **os.environ,
        "TORCHINDUCTOR_CACHE_DIR": str(cache / "inductor"),
        "TRITON_CACHE_DIR": str(cache / "triton"),
    }
    env.pop("TORCH_TRACE", None)
    if trace is not None:
        env["TORCH_TRACE"] = str(trace)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, __file__, "--child", *args], env=env, capture_output=True, text=True, timeout=1800
    )
    if proc.returncode:
        raise SystemExit(f"child {args} failed:\n{proc.stderr[-3000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["process_s"] = time.perf_counter() - t0
    return out


def _from_trace(trace: Path) -> dict:
    """torch's compile seconds, compiles, cache outcomes and fxlens's repeated block, from the trace."""
    from fxlens.report.build import build_report
    from fxlens.trace.session import Session

    report = build_report(Session.open(trace), with_guards=False)
    ct = report["compile_times"]
    caches: dict = {}
    for row in ct["per_compile"]:
        for c in row["caches"]:
            caches.setdefault(c["cache"], {}).setdefault(c["outcome"], 0)
            caches[c["cache"]][c["outcome"]] += 1
    blocks = report["repeated_blocks"]
    return {
        "compile_s": ct["total_s"],
        "compiles": len(ct["per_compile"]),
        "graphs": len(report["graphs"]),
        "caches": caches,
        "block": blocks[0]["message"] if blocks else "",
    }


def _load() -> float:
    return os.getloadavg()[0]


def measure(name: str, rounds: int, pairs: int, tmp: Path) -> dict:
    cold: dict[str, list[dict]] = {"whole": [], "regional": []}
    loads = [_load()]
    for k in range(rounds):
        for mode in ("whole", "regional") if k % 2 == 0 else ("regional", "whole"):
            cache, trace = tmp / f"{name}-{mode}-{k}-cache", tmp / f"{name}-{mode}-{k}-trace"
            r = _run_child(["cold", name, mode], cache, trace)
            r.update(_from_trace(trace))
            cold[mode].append(r)
            loads.append(_load())
            if mode == "whole" and k == 0:  # the same process again, warm from this cache
                wtrace = tmp / f"{name}-warm-trace"
                warm = _run_child(["cold", name, "whole"], cache, wtrace)
                warm.update(_from_trace(wtrace))
                kept = cache  # the steady-state process starts from it (its timings are after warm-up)
            else:
                shutil.rmtree(cache, ignore_errors=True)
    steady = _run_child(["steady", name, str(pairs)], kept, None)
    loads.append(_load())
    return {"cold": cold, "warm": warm, "steady": steady, "loads": loads}


def _med(rows: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def _caches(c: dict) -> str:
    return (
        "; ".join(f"{k}: " + ", ".join(f"{n} {o}" for o, n in v.items()) for k, v in sorted(c.items())) or "-"
    )


def render(results: dict, rounds: int, pairs: int) -> str:
    from fxlens.probe.interval import paired_interval

    out = [
        "## Regional compilation",
        "",
        f"`python bench/regional.py --rounds {rounds} --pairs {pairs} --write`: whole-model `torch.compile(model)` vs "
        "each repeated block compiled by hand (`for block in blocks: block.compile()`), inductor, tiny "
        "models with random weights (12 layers each, hidden size 64). Cold: a fresh process per run with an "
        "empty private cache folder (first call's wall time; torch's compile seconds and compiles from the "
        "run's TORCH_TRACE, read by fxlens), medians of the rounds, alternated. Steady state: both versions in "
        f"one process, {pairs} interleaved call pairs, ratio of medians with doctor's 95% paired-bootstrap "
        "interval (> 1: regional faster). Warm: the whole model in a fresh process again, with the cache its "
        "cold run filled. Shared 2-core box: other engineers' work was running (load below).",
        "",
        "| model | block fxlens names (whole run) | cold first call whole → regional (ratio) | torch compile s whole → regional | compiles whole / regional | steady ms/call whole, regional | speed regional vs whole [95%] | outputs equal |",
        "|---|---|---|---|---|---|---|---|",
    ]
    warm_rows = []
    for name, r in results.items():
        w, g = r["cold"]["whole"], r["cold"]["regional"]
        fw, fg = _med(w, "first_call_s"), _med(g, "first_call_s")
        cw, cg = _med(w, "compile_s"), _med(g, "compile_s")
        pr = r["steady"]["pairs"]
        iv = paired_interval([(a, b) for a, b in pr])
        mw, mr = statistics.median(a for a, _ in pr), statistics.median(b for _, b in pr)
        ivs = f"[{iv[0]:.2f}, {iv[1]:.2f}]" if iv else "[no interval]"
        out.append(
            f"| {name} | {w[0]['block'].split(' (compile')[0]} | {fw:.1f} s → {fg:.1f} s ({fg / fw:.2f}x) | "
            f"{cw:.1f} → {cg:.1f} | {w[0]['compiles']} / {g[0]['compiles']} | {mw:.2f}, {mr:.2f} | "
            f"{mw / mr:.2f}x {ivs} | {r['steady']['outputs_close']} |"
        )
        warm = r["warm"]
        warm_rows.append(
            f"| {name} | {fw:.1f} s ({_caches(w[0]['caches'])}) | {warm['first_call_s']:.1f} s "
            f"({_caches(warm['caches'])}) | {cw:.1f} → {warm['compile_s']:.1f} |"
        )
    loads = [x for r in results.values() for x in r["loads"]]
    out += [
        "",
        "Cold vs warm (whole model; the warm process reads the cache folder the cold one filled):",
        "",
        "| model | cold first call (cache outcomes torch logged) | warm first call (cache outcomes) | torch compile s cold → warm |",
        "|---|---|---|---|",
        *warm_rows,
        "",
        f"1-minute load average during the runs: {min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} cores.",
    ]
    return "\n".join(out) + "\n"


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        kind, name = sys.argv[2], sys.argv[3]
        res = child_cold(name, sys.argv[4]) if kind == "cold" else child_steady(name, int(sys.argv[4]))
        print(json.dumps(res))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="llama,vit")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--pairs", type=int, default=40)
    parser.add_argument("--write", action="store_true", help="write the section of BENCHMARKS.md")
    parser.add_argument("--json", metavar="FILE", help="also write the raw results (after each model)")
    parser.add_argument("--from-json", metavar="FILE", nargs="+", help="render earlier raw results instead")
    args = parser.parse_args()
    results: dict = {}
    if args.from_json:
        for f in args.from_json:
            results.update(json.loads(Path(f).read_text()))
    else:
        tmp = Path(tempfile.mkdtemp(prefix="fxlens-regional-"))
        try:
            for m in args.models.split(","):
                results[m] = measure(m, args.rounds, args.pairs, tmp)
                if args.json:
                    Path(args.json).write_text(json.dumps(results, indent=1))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    text = render(results, args.rounds, args.pairs)
    print(text)
    if args.write:
        from benchmarks_md import write_section

        write_section("Regional compilation", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
