"""doctor's memory by cause on three real models, checked against by-hand measurements.

Models (small configs, random weights, nothing downloaded): `llama` (HF transformers, a training
step: forward with labels, backward, AdamW), `vit` (HF, eval under `torch.no_grad()`), `resnet` (HF,
a conv net's training step) and `vae` (diffusers' AutoencoderKL, a training step on its
reconstruction error; diffusers is a bench-only dependency: `pip install --no-deps diffusers`).
Each is compiled with inductor.

Per model, in a fresh process (`--one MODEL`): the script's calls, then doctor's measurement of the
compiled object's call (fxlens.probe.memprobe.measure, as the probe makes it), then by hand:
- saved activations: a `saved_tensors_hooks` count of distinct storages, parameters and inputs
  left out, eager and compiled (a separate implementation from doctor's);
- the peak difference: torch's profiler around the same call and its real `loss.backward()`, the
  running sum of its memory events, compiled minus eager.
Then `fxlens doctor --budget 5` on the same script (`--script MODEL`), timed: doctor's total time.

`python bench/memory_causes.py [--write] [--no-doctor] [MODEL ...]`
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time

MODELS = ("llama", "vit", "resnet", "vae")
CALLS = 3


def _vae():
    """diffusers' AutoencoderKL (two down and two up blocks, attention in the middle), wrapped so a
    call returns its reconstruction error as `.loss`, as the HF models' training calls do."""
    from dataclasses import dataclass

    import diffusers
    import torch
    import transformers

    @dataclass
    class StepOutput(transformers.utils.ModelOutput):
        loss: torch.Tensor | None = None
        sample: torch.Tensor | None = None

    class VAEStep(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.vae = diffusers.AutoencoderKL(
                in_channels=3,
                out_channels=3,
                down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
                up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"),
                block_out_channels=(32, 64),
                layers_per_block=1,
                latent_channels=4,
                norm_num_groups=32,
                sample_size=32,
            )

        def forward(self, pixel_values):
            sample = self.vae(pixel_values).sample
            return StepOutput(loss=torch.nn.functional.mse_loss(sample, pixel_values), sample=sample)

    return VAEStep().train(), {"pixel_values": torch.randn(2, 3, 32, 32)}, True


def build(name: str):
    """(model, keyword inputs, training?) seeded."""
    import torch
    import transformers

    torch.manual_seed(0)
    if name == "llama":
        cfg = transformers.LlamaConfig(
            vocab_size=1000,
            hidden_size=128,
            intermediate_size=384,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=256,
        )
        ids = torch.randint(0, 1000, (2, 64))
        return transformers.LlamaForCausalLM(cfg).train(), {"input_ids": ids, "labels": ids}, True
    if name == "vit":
        cfg = transformers.ViTConfig(
            hidden_size=128,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=512,
            image_size=64,
            patch_size=16,
            num_labels=100,
        )
        return (
            transformers.ViTForImageClassification(cfg).eval(),
            {"pixel_values": torch.randn(2, 3, 64, 64)},
            False,
        )
    if name == "resnet":
        cfg = transformers.ResNetConfig(
            embedding_size=32, hidden_sizes=[32, 64, 128, 256], depths=[1, 1, 1, 1], num_labels=10
        )
        kw = {"pixel_values": torch.randn(4, 3, 64, 64), "labels": torch.randint(0, 10, (4,))}
        return transformers.ResNetForImageClassification(cfg).train(), kw, True
    if name == "vae":
        return _vae()
    raise SystemExit(f"unknown model {name!r} (one of {', '.join(MODELS)})")


def script(name: str):
    """The script doctor runs: CALLS steps (training: AdamW) or inferences under no_grad."""
    import torch

    model, kw, train = build(name)
    compiled = torch.compile(model)
    if train:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        for _ in range(CALLS):
            compiled(**kw).loss.backward()
            opt.step()
            opt.zero_grad()
    else:
        with torch.no_grad():
            for _ in range(CALLS):
                compiled(**kw)
    return model, compiled, kw, train


def _by_hand_saved(fn, kw, skip) -> int:
    import torch

    seen = {}

    def pack(t):
        try:
            seen.setdefault(t.untyped_storage().data_ptr(), t.untyped_storage().nbytes())
        except NotImplementedError:
            pass
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn(**kw)
    del out
    return sum(n for p, n in seen.items() if p not in skip)


def _by_hand_peak(fn, kw, train: bool) -> int:
    """The call's (and its backward's) peak above its start: the profiler's memory events summed."""
    import gc

    from torch.profiler import ProfilerActivity, profile

    gc.collect()
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        out = fn(**kw)
        if train:
            out.loss.backward()
        del out
    level = peak = 0
    events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    for e in sorted(events, key=lambda e: e.start_ns()):
        level += e.nbytes()
        peak = max(peak, level)
    return peak


def one(name: str) -> dict:
    import torch

    from fxlens.probe.memprobe import measure

    model, compiled, kw, train = script(name)
    # in the grad mode the script called it in, as doctor's probe replays it (another recompiles)
    with torch.enable_grad() if train else torch.no_grad():
        doctor = measure(model, compiled, (), kw, backward=train)
    hand: dict = {}
    if train:
        skip = {p.untyped_storage().data_ptr() for p in model.parameters()}
        skip |= {b.untyped_storage().data_ptr() for b in model.buffers()}
        skip |= {t.untyped_storage().data_ptr() for t in kw.values()}
        hand["saved"] = {
            "eager": _by_hand_saved(model, kw, skip),
            "compiled": _by_hand_saved(compiled, kw, skip),
        }
        model.zero_grad(set_to_none=True)
    ctx = torch.enable_grad() if train else torch.no_grad()
    with ctx:
        hand["peak"] = {
            "eager": _by_hand_peak(model, kw, train),
            "compiled": _by_hand_peak(compiled, kw, train),
        }
    for side in ("eager", "compiled"):
        if doctor[side].get("saved"):
            doctor[side]["saved"].pop("order", None)
    return {"doctor": doctor, "by_hand": hand}


def _doctor_time(name: str) -> dict:
    env = dict(os.environ, FXLENS_SESSIONS_DIR=os.path.join("/tmp", "fxlens-memory-bench"))
    t0 = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "fxlens.cli",
            "doctor",
            "--budget",
            "5",
            "--json",
            "-",
            __file__,
            "--script",
            name,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
    )
    took = time.perf_counter() - t0
    try:
        mem = json.loads(done.stdout)["peak_memory"]
    except (ValueError, KeyError):
        return {"seconds": round(took, 1), "error": done.stderr[-300:]}
    return {
        "seconds": round(took, 1),
        "memory_s": mem.get("cost", {}).get("seconds"),
        "causes": [(c["cause"], c["bytes"]) for c in mem.get("causes", [])],
    }


def _mib(n) -> str:
    return "-" if n is None else f"{n / (1 << 20):.2f}"


def row(name: str, r: dict) -> str:
    d, h = r["doctor"], r["by_hand"]
    ds = [(d[s].get("saved") or {}).get("bytes") for s in ("eager", "compiled")]
    hs = [h.get("saved", {}).get(s) for s in ("eager", "compiled")]
    dd = d["compiled"]["peak"] - d["eager"]["peak"]
    hd = h["peak"]["compiled"] - h["peak"]["eager"]
    cost = d["eager"]["profiled_s"] + d["compiled"]["profiled_s"]
    plain = d["eager"]["plain_s"] + d["compiled"]["plain_s"]
    doc = r.get("doctor_run") or {}
    return (
        f"| {name} | {_mib(ds[0])} / {_mib(hs[0])} | {_mib(ds[1])} / {_mib(hs[1])} | "
        f"{_mib(d['eager']['peak'])} / {_mib(h['peak']['eager'])} | {_mib(d['compiled']['peak'])} / "
        f"{_mib(h['peak']['compiled'])} | {_mib(dd)} / {_mib(hd)} | {_mib(d['held']['bytes'])} | "
        f"{d['seconds']:.2f} ({cost:.2f} vs {plain:.2f}) | {doc.get('seconds', '-')} |"
    )


HEAD = (
    "| model | saved eager MiB doctor / hand | saved compiled MiB doctor / hand | peak eager MiB doctor / hand "
    "| peak compiled MiB doctor / hand | peak difference MiB doctor / hand | held MiB "
    "| measurement s (profiled vs plain calls) | doctor total s |\n|---|---|---|---|---|---|---|---|---|"
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="*", default=list(MODELS))
    ap.add_argument("--one", metavar="MODEL", help="(child) measure one model, print JSON")
    ap.add_argument("--script", metavar="MODEL", help="run the model's script (what doctor runs)")
    ap.add_argument("--no-doctor", action="store_true", help="skip timing `fxlens doctor` on each model")
    ap.add_argument("--write", action="store_true", help="put the table in BENCHMARKS.md")
    args = ap.parse_args()
    if args.script:
        script(args.script)
        return 0
    if args.one:
        print(json.dumps(one(args.one)))
        return 0
    rows = []
    for name in args.models:
        if name == "vae" and importlib.util.find_spec("diffusers") is None:
            print("vae skipped: diffusers is not installed (`pip install --no-deps diffusers`)")
            continue
        done = subprocess.run(
            [sys.executable, __file__, "--one", name], capture_output=True, text=True, timeout=1800
        )
        line = next((ln for ln in done.stdout.splitlines() if ln.startswith("{")), None)
        if line is None:
            print(name, "failed:", done.stderr[-500:])
            continue
        r = json.loads(line)
        if not args.no_doctor:
            r["doctor_run"] = _doctor_time(name)
        print(json.dumps(r.get("doctor_run")), flush=True)
        rows.append(row(name, r))
        print(rows[-1], flush=True)
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    text = HEAD + "\n" + "\n".join(rows) + f"\n\n1-minute load average at the end: {load}."
    print(text)
    if args.write:
        from benchmarks_md import write_table

        write_table("doctor's memory by cause on real models", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
