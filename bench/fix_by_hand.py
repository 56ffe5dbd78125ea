"""Every verdict of `fxlens fix` checked by applying the fix by hand (docs/guides/fix.md).

    python bench/fix_by_hand.py [--out DIR] [CASE ...]

For each case: `fxlens fix --json` on the script as a user runs it (stdin, torchrun, keyword
inputs), then, for each fix it tried, the same fix written into a copy of the script by hand
(the line a user would add or change) and run with `fxlens run --json`. The table puts fix's
after-counts beside the by-hand counts (torch's own trace of each run), and whether the by-hand
run failed the way fix said. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "tests" / "fix" / "scripts"
CASES_DIR = ROOT / "bench" / "fix_cases"

_LLAMA_REGIONAL = (
    'model = torch.compile(LlamaForCausalLM(cfg).eval(), backend="eager")',
    "model = LlamaForCausalLM(cfg).eval()\n"
    "for b in model.modules():\n"
    '    if type(b).__name__ == "LlamaDecoderLayer":\n'
    '        b.forward = torch.compile(b.forward, backend="eager")',
)
_IDS = "        ids = torch.randint(0, 128, (1, n))\n"


_CALL = "        out = model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=False)"
_BOTH = [
    (
        _CALL,
        "        mask = torch.ones_like(ids)\n        torch._dynamo.mark_dynamic(ids, 1)\n"
        "        torch._dynamo.mark_dynamic(mask, 1)\n"
        "        out = model(input_ids=ids, attention_mask=mask, use_cache=False)",
    )
]


def _config(name: str, value) -> tuple[str, str]:
    """The by-hand edit of a config fix: the switch set right after `import torch`."""
    return ("import torch\n", f"import torch\ntorch._dynamo.config.{name} = {value!r}\n")


# name -> (script, fix options, stdin, {fix selector: [(old, new) edits by hand]})
CASES = {
    "jobs (stdin, library module, bound method, VAE methods)": (
        SCRIPTS / "jobs_shapes.py",
        [],
        "8 12 16\n",
        {
            "mark_dynamic args[0]": [
                (
                    "    lin(torch.randn(n, 4))",
                    "    x = torch.randn(n, 4)\n    torch._dynamo.mark_dynamic(x, 0)\n    lin(x)",
                )
            ],
            "dynamic": [
                (
                    'lin = torch.compile(torch.nn.Linear(4, 4), backend="eager")',
                    'lin = torch.compile(torch.nn.Linear(4, 4), backend="eager", dynamic=True)',
                )
            ],
            "mark_dynamic obs": [
                (
                    "    act(torch.randn(n, 4))",
                    "    o = torch.randn(n, 4)\n    torch._dynamo.mark_dynamic(o, 0)\n    act(o)",
                )
            ],
            "compile_methods": [
                (
                    'vae = torch.compile(VAE(), backend="eager")',
                    'vae = VAE()\nvae.encode = torch.compile(vae.encode, backend="eager")\n'
                    'vae.decode = torch.compile(vae.decode, backend="eager")',
                ),
            ],
        },
    ),
    "HF Llama, two lengths": (
        SCRIPTS / "hf_llama_lengths.py",
        [],
        None,
        {
            "mark_dynamic": [(_IDS, _IDS + "        torch._dynamo.mark_dynamic(ids, 1)\n")],
            "maybe_mark_dynamic": [(_IDS, _IDS + "        torch._dynamo.maybe_mark_dynamic(ids, 1)\n")],
            "mark_dynamic_together": _BOTH,
            "regional": [_LLAMA_REGIONAL],
            "dynamic": [('backend="eager")', 'backend="eager", dynamic=True)')],
        },
    ),
    "HF BERT, three lengths": (
        CASES_DIR / "hf_bert_lengths.py",
        [],
        None,
        {
            "mark_dynamic": [
                (
                    "        ids = torch.randint(0, 100, (2, n))\n",
                    "        ids = torch.randint(0, 100, (2, n))\n        torch._dynamo.mark_dynamic(ids, 1)\n",
                )
            ],
            "maybe_mark_dynamic": [
                (
                    "        ids = torch.randint(0, 100, (2, n))\n",
                    "        ids = torch.randint(0, 100, (2, n))\n        torch._dynamo.maybe_mark_dynamic(ids, 1)\n",
                )
            ],
            "mark_dynamic_together": [
                (
                    "        out = model(input_ids=ids, attention_mask=torch.ones_like(ids))",
                    "        mask = torch.ones_like(ids)\n        torch._dynamo.mark_dynamic(ids, 1)\n"
                    "        torch._dynamo.mark_dynamic(mask, 1)\n"
                    "        out = model(input_ids=ids, attention_mask=mask)",
                )
            ],
            "dynamic": [('backend="eager")', 'backend="eager", dynamic=True)')],
            "regional": [
                (
                    'model = torch.compile(BertModel(cfg).eval(), backend="eager")',
                    "model = BertModel(cfg).eval()\nfor b in model.modules():\n"
                    '    if type(b).__name__ == "BertLayer":\n        b.forward = torch.compile(b.forward, backend="eager")',
                ),
            ],
        },
    ),
    "nn.Transformer, causal mask": (
        CASES_DIR / "nn_transformer_causal.py",
        [],
        None,
        {
            "call_kwarg": [("tgt_mask=mask)", "tgt_mask=mask, tgt_is_causal=True)")],
            "config capture_scalar_outputs": [
                ("import torch\n", "import torch\ntorch._dynamo.config.capture_scalar_outputs = True\n")
            ],
        },
    ),
    "keyword input and .item()": (
        SCRIPTS / "kw_and_item.py",
        [],
        None,
        {
            "mark_dynamic": [
                (
                    "    out = model(input_ids=torch.arange(n).unsqueeze(0))",
                    "    ids = torch.arange(n).unsqueeze(0)\n    torch._dynamo.mark_dynamic(ids, 1)\n    out = model(input_ids=ids)",
                )
            ],
            "config capture_scalar_outputs": [
                ("import torch\n", "import torch\ntorch._dynamo.config.capture_scalar_outputs = True\n")
            ],
        },
    ),
    "DataLoader, short last batch": (
        SCRIPTS / "dataloader.py",
        ["--try", "dynamic"],
        None,
        {
            "mark_dynamic": [
                (
                    "    loss = torch.nn.functional.mse_loss(cmodel(x), y)",
                    "    torch._dynamo.mark_dynamic(x, 0)\n    loss = torch.nn.functional.mse_loss(cmodel(x), y)",
                )
            ],
            "dynamic": [
                (
                    'cmodel = torch.compile(model, backend="aot_eager")',
                    'cmodel = torch.compile(model, backend="aot_eager", dynamic=True)',
                )
            ],
            "drop_last": [("batch_size=8)", "batch_size=8, drop_last=True)")],
        },
    ),
    "twelve blocks, regional": (
        SCRIPTS / "twelve_layers.py",
        ["--try", "regional:Block"],
        None,
        {
            "regional": [
                (
                    'model = torch.compile(Model(), backend="inductor")',
                    'model = Model()\nfor b in model.blocks:\n    b.forward = torch.compile(b.forward, backend="inductor")',
                ),
            ],
        },
    ),
    "HF GPT-2, three lengths": (
        CASES_DIR / "hf_gpt2_lengths.py",
        [],
        None,
        {
            "dynamic": [('backend="eager")', 'backend="eager", dynamic=True)')],
            "mark_dynamic": [
                (
                    "        ids = torch.randint(0, 100, (1, n))\n",
                    "        ids = torch.randint(0, 100, (1, n))\n        torch._dynamo.mark_dynamic(ids, 1)\n",
                )
            ],
            "regional": [
                (
                    'model = torch.compile(GPT2LMHeadModel(cfg).eval(), backend="eager")',
                    "model = GPT2LMHeadModel(cfg).eval()\nfor b in model.modules():\n"
                    '    if type(b).__name__ == "GPT2Block":\n        b.forward = torch.compile(b.forward, backend="eager")',
                )
            ],
        },
    ),
    "HF BART generate() on a compiled module": (
        SCRIPTS / "hf_bart_generate.py",
        [],
        None,
        {
            "compile_in_place": [
                (
                    'model = torch.compile(BartForConditionalGeneration(cfg).eval(), backend="eager")',
                    'model = BartForConditionalGeneration(cfg).eval()\nmodel.compile(backend="eager")',
                )
            ]
        },
    ),
    "nn.TransformerEncoder, three lengths": (
        CASES_DIR / "encoder_lengths.py",
        [],
        None,
        {
            "dynamic": [('.eval(), backend="eager")', '.eval(), backend="eager", dynamic=True)')],
            "mark_dynamic": [
                (
                    "        out = encoder(torch.randn(2, n, 16))",
                    "        x = torch.randn(2, n, 16)\n        torch._dynamo.mark_dynamic(x, 1)\n        out = encoder(x)",
                )
            ],
            "regional": [
                (
                    'encoder = torch.compile(torch.nn.TransformerEncoder(layer, num_layers=2).eval(), backend="eager")',
                    "encoder = torch.nn.TransformerEncoder(layer, num_layers=2).eval()\nfor b in encoder.modules():\n"
                    '    if type(b).__name__ == "TransformerEncoderLayer":\n'
                    '        b.forward = torch.compile(b.forward, backend="eager")',
                )
            ],
        },
    ),
    "a Python float that changes (temperature)": (
        CASES_DIR / "float_scale.py",
        [],
        None,
        {"dynamic": [('@torch.compile(backend="eager")', '@torch.compile(backend="eager", dynamic=True)')]},
    ),
    "message passing, three node counts": (
        CASES_DIR / "gnn_nodes.py",
        [],
        None,
        {
            "mark_dynamic x": [
                (
                    "    out = layer(x, edges)",
                    "    torch._dynamo.mark_dynamic(x, 0)\n    out = layer(x, edges)",
                )
            ],
            "mark_dynamic edges": [
                (
                    "    out = layer(x, edges)",
                    "    torch._dynamo.mark_dynamic(edges, 1)\n    out = layer(x, edges)",
                )
            ],
            "mark_dynamic_together": [
                (
                    "    out = layer(x, edges)",
                    "    torch._dynamo.mark_dynamic(x, 0)\n    torch._dynamo.mark_dynamic(edges, 1)\n"
                    "    out = layer(x, edges)",
                )
            ],
        },
    ),
    "DDP on 2 ranks (torchrun)": (
        SCRIPTS / "ddp_sizes.py",
        ["--nproc", "2"],
        None,
        {
            "mark_dynamic": [
                (
                    "    loss = step(torch.randn(n, 8)).sum()",
                    "    x = torch.randn(n, 8)\n    torch._dynamo.mark_dynamic(x, 0)\n    loss = step(x).sum()",
                )
            ],
            "dynamic": [
                (
                    'step = torch.compile(model.module, backend="eager")',
                    'step = torch.compile(model.module, backend="eager", dynamic=True)',
                )
            ],
        },
    ),
    "HF DETR with labels (Hungarian matcher loss)": (
        CASES_DIR / "detr_matcher.py",
        [],
        None,
        {
            "dynamic": [
                (
                    'model = torch.compile(DetrForObjectDetection(cfg), backend="eager")',
                    'model = torch.compile(DetrForObjectDetection(cfg), backend="eager", dynamic=True)',
                )
            ],
            "config capture_scalar_outputs": [_config("capture_scalar_outputs", True)],
            "config capture_dynamic_output_shape_ops": [_config("capture_dynamic_output_shape_ops", True)],
            "config recompile_limit": [_config("recompile_limit", 64)],
            "regional": [
                (
                    'model = torch.compile(DetrForObjectDetection(cfg), backend="eager")',
                    "model = DetrForObjectDetection(cfg)\nfor b in model.modules():\n"
                    '    if type(b).__name__ == "ResNetConvLayer":\n'
                    '        b.forward = torch.compile(b.forward, backend="eager")',
                )
            ],
        },
    ),
    "diffusers AutoencoderKL through encode/decode": (
        CASES_DIR / "vae_encode_decode.py",
        [],
        None,
        {
            "compile_methods": [
                (
                    'vae = torch.compile(vae, backend="eager")',
                    'vae.encode = torch.compile(vae.encode, backend="eager")\n'
                    'vae.decode = torch.compile(vae.decode, backend="eager")',
                )
            ],
        },
    ),
    "peft LoRA on HF Llama, two lengths": (
        CASES_DIR / "peft_lora_llama.py",
        [],
        None,
        {
            "dynamic": [('.eval(), backend="eager")', '.eval(), backend="eager", dynamic=True)')],
            "mark_dynamic": [(_IDS, _IDS + "        torch._dynamo.mark_dynamic(ids, 1)\n")],
            "maybe_mark_dynamic": [(_IDS, _IDS + "        torch._dynamo.maybe_mark_dynamic(ids, 1)\n")],
            "mark_dynamic_together": _BOTH,
            "regional": [
                (
                    'model = torch.compile(get_peft_model(LlamaForCausalLM(cfg), lora).eval(), backend="eager")',
                    "model = get_peft_model(LlamaForCausalLM(cfg), lora).eval()\nfor b in model.modules():\n"
                    '    if type(b).__name__ == "LlamaDecoderLayer":\n'
                    '        b.forward = torch.compile(b.forward, backend="eager")',
                )
            ],
        },
    ),
    "HF Mixtral (MoE), two lengths": (
        CASES_DIR / "mixtral_moe.py",
        [],
        None,
        {
            "dynamic": [('.eval(), backend="eager")', '.eval(), backend="eager", dynamic=True)')],
            "mark_dynamic": [(_IDS, _IDS + "        torch._dynamo.mark_dynamic(ids, 1)\n")],
            "maybe_mark_dynamic": [(_IDS, _IDS + "        torch._dynamo.maybe_mark_dynamic(ids, 1)\n")],
            "mark_dynamic_together": _BOTH,
            "regional": [
                (
                    'model = torch.compile(MixtralForCausalLM(cfg).eval(), backend="eager")',
                    "model = MixtralForCausalLM(cfg).eval()\nfor b in model.modules():\n"
                    '    if type(b).__name__ == "MixtralDecoderLayer":\n'
                    '        b.forward = torch.compile(b.forward, backend="eager")',
                )
            ],
        },
    ),
    "HF T5 generate() on a compiled module": (
        CASES_DIR / "t5_generate.py",
        [],
        None,
        {
            "compile_in_place": [
                (
                    'model = torch.compile(T5ForConditionalGeneration(cfg).eval(), backend="eager")',
                    'model = T5ForConditionalGeneration(cfg).eval()\nmodel.compile(backend="eager")',
                )
            ],
            "dynamic": [('.eval(), backend="eager")', '.eval(), backend="eager", dynamic=True)')],
        },
    ),
    "torchvision resnet18, short validation batch": (
        CASES_DIR / "tv_resnet_val.py",
        [],
        None,
        {
            "mark_dynamic x": [
                (
                    "        correct += int((cmodel(x)",
                    "        torch._dynamo.mark_dynamic(x, 0)\n        correct += int((cmodel(x)",
                )
            ],
            "dynamic": [
                (
                    'cmodel = torch.compile(model, backend="eager")',
                    'cmodel = torch.compile(model, backend="eager", dynamic=True)',
                )
            ],
            "regional": [
                (
                    'cmodel = torch.compile(model, backend="eager")',
                    "cmodel = model\nfor b in model.modules():\n"
                    '    if type(b).__name__ == "BasicBlock":\n'
                    '        b.forward = torch.compile(b.forward, backend="eager")',
                )
            ],
            "drop_last": [
                (
                    "torch.randint(0, 4, (10,))), batch_size=4)",
                    "torch.randint(0, 4, (10,))), batch_size=4, drop_last=True)",
                )
            ],
        },
    ),
    "nn.LSTM compiled whole, three lengths": (
        CASES_DIR / "lstm_lengths.py",
        [],
        None,
        {
            "config allow_rnn": [_config("allow_rnn", True)],
            "dynamic": [
                ('batch_first=True), backend="eager")', 'batch_first=True), backend="eager", dynamic=True)')
            ],
        },
    ),
    "PPO policy, bound-method compile": (
        CASES_DIR / "ppo_bound_method.py",
        [],
        None,
        {
            "mark_dynamic x": [
                (
                    "    _, logprob, value = policy(x, action)",
                    "    torch._dynamo.mark_dynamic(x, 0)\n    _, logprob, value = policy(x, action)",
                )
            ],
            "mark_dynamic_together": [
                (
                    "    _, logprob, value = policy(x, action)",
                    "    torch._dynamo.mark_dynamic(x, 0)\n    torch._dynamo.mark_dynamic(action, 0)\n"
                    "    _, logprob, value = policy(x, action)",
                )
            ],
            "dynamic": [
                (
                    'policy = torch.compile(agent.get_action_and_value, backend="eager")',
                    'policy = torch.compile(agent.get_action_and_value, backend="eager", dynamic=True)',
                )
            ],
        },
    ),
}


# by-hand runs of a fix fxlens did not offer, to check a text that says a recompile is expected
# (nothing to change): if the usual switch leaves the recompiles, the text stands
PROBES = {
    "HF DETR with labels (Hungarian matcher loss)": {
        "dynamic=True": [
            (
                'model = torch.compile(DetrForObjectDetection(cfg), backend="eager")',
                'model = torch.compile(DetrForObjectDetection(cfg), backend="eager", dynamic=True)',
            )
        ]
    },
}

# cases that need another interpreter: torchvision's wheel here is a CUDA build that does not load
# beside the CPU torch 2.13 of .venv, so torchvision runs in a venv of torch 2.14.1 (the CUDA
# wheel, on CPU) and torchvision 0.29.1, with this checkout installed (`pip install --no-deps -e .`)
PYTHON = {"torchvision resnet18, short validation batch": ROOT / ".venv-compat-tv214" / "bin" / "python"}


def _fxlens(
    args: list[str], cwd: Path, stdin: str | None, python: str = sys.executable
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(python), "-m", "fxlens.cli", *args],
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=1800,
        env={**os.environ, "FXLENS_SESSIONS_DIR": str(cwd / "sessions")},
    )


def _select(fixes: list[dict], selector: str) -> dict | None:
    kind, _, arg = selector.partition(" ")
    for f in fixes:
        label = f"{f['params'].get('arg', '')}{f['params'].get('name', '')}"
        if f["kind"] == kind and (not arg or arg == label):
            return f
    return None


# --reuse: a by-hand run whose script is unchanged is read back, not run again
_REUSE = False


def _by_hand(script: Path, edits, out: Path, stdin, nproc: str | None, python: str) -> dict:
    src = script.read_text()
    for old, new in edits:
        if old not in src:
            return {"failed": -1, "error": f"by-hand edit does not match: {old[:40]!r}"}
        src = src.replace(old, new, 1)
    out.mkdir(parents=True, exist_ok=True)
    hand = out / f"hand_{script.stem}.py"
    done = out / "hand.out"  # `returncode\nstdout+stderr` of a by-hand run made before (--reuse)
    if _REUSE and done.exists() and hand.exists() and hand.read_text() == src:
        code, _, said = done.read_text().partition("\n")
        proc = subprocess.CompletedProcess([], int(code), said, "")
    elif _REUSE and (out / "hand.json").exists() and hand.exists() and hand.read_text() == src:
        # a run made before hand.out was kept: its exit code is in its session (no error line)
        meta = [json.loads(m.read_text()) for m in (out / "sessions").glob("*/session.json")]
        proc = subprocess.CompletedProcess([], int(meta[-1].get("exit_code") or 0) if meta else 0, "", "")
    else:
        hand.write_text(src)
        opts = ["--nproc", nproc] if nproc else []
        proc = _fxlens(
            ["run", "--quiet", "--json", str(out / "hand.json"), *opts, str(hand)], out, stdin, python
        )
        done.write_text(f"{proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    report = json.loads((out / "hand.json").read_text()) if (out / "hand.json").exists() else None
    if report is None:
        return {"failed": proc.returncode, "error": (proc.stdout.strip().splitlines() or [""])[-1][:120]}
    err = next((ln for ln in reversed(proc.stdout.splitlines()) if "Error" in ln), "")
    return {
        "graphs": len(report["graphs"]),
        "breaks": sum(b["count"] for b in report["graph_breaks"]),
        "recompiles": len(report["recompiles"]),
        "failed": proc.returncode,
        "error": err[:120],
    }


def _counts(m: dict | None) -> str:
    return "-" if not m else f"{m['graphs']}/{m['breaks']}/{m['recompiles']}"


def run_case(name: str, out: Path, reuse: bool = False, fix_only: bool = False) -> list[str]:
    """One case's rows; REUSE: the `fxlens fix` result already in OUT (only the by-hand runs run)."""
    script, opts, stdin, hands = CASES[name]
    python = str(PYTHON.get(name, sys.executable))
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    if not (reuse and (out / "fix.json").exists()):
        proc = _fxlens(
            ["fix", "--session", str(out / "s"), "--json", str(out / "fix.json"), *opts, str(script)],
            out,
            stdin,
            python,
        )
        if not (out / "fix.json").exists():
            return [f"| {name} | fxlens fix failed: {proc.stderr.strip().splitlines()[-1:]} | | | | | |"]
    if fix_only:
        return [f"| {name} | (fxlens fix: {time.time() - t0:.0f} s) | | | | |"]
    if not (out / "fix.json").exists():
        return [f"| {name} | fxlens fix failed: {proc.stderr.strip().splitlines()[-1:]} | | | | | |"]
    result = json.loads((out / "fix.json").read_text())
    nproc = opts[opts.index("--nproc") + 1] if "--nproc" in opts else None
    rows = []
    for f in result["fixes"]:
        selector = next((s for s in hands if _select([f], s)), None)
        hand = (
            _by_hand(script, hands[selector], out / f"hand-{len(rows)}", stdin, nproc, python)
            if selector
            else None
        )
        hand_s = (
            "not applied by hand"
            if hand is None
            else (f"exit {hand['failed']}: {hand['error']}" if hand.get("failed") else _counts(hand))
        )
        agree = "-"
        if hand is not None and f["after"] and not hand.get("failed"):
            agree = "yes" if _counts(f["after"]) == _counts(hand) else "NO"
        elif hand is not None and hand.get("failed"):
            cls = re.search(r"(\w+(?:Error|Exception))", hand["error"])
            agree = "yes" if f["verdict"] == "hurts" and cls and cls.group(1) in f["why"] else "NO"
        rows.append(
            f"| {name} | {f['fix'][:70].replace('|', '/')} | {_counts(f['before'])} → {_counts(f['after'])} | "
            f"**{f['verdict']}** | {hand_s} | {agree} |"
        )
    for label, edits in PROBES.get(name, {}).items():
        hand = _by_hand(script, edits, out / f"probe-{label}", stdin, nproc, python)
        said = f"exit {hand['failed']}: {hand['error']}" if hand.get("failed") else _counts(hand)
        rows.append(f"| {name} | by hand only, no fix of fxlens: {label} | | | {said} | - |")
    rows.append(f"| {name} | ({time.time() - t0:.0f} s for fix and by-hand runs) | | | | |")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/tmp/fix_by_hand")
    ap.add_argument("--reuse", action="store_true", help="keep a case's fix.json already in --out")
    ap.add_argument("--fix-only", action="store_true", help="run `fxlens fix` only, no by-hand runs")
    ap.add_argument("cases", nargs="*", help="case names, or their numbers in CASES (0-based)")
    a = ap.parse_args()
    global _REUSE
    _REUSE = a.reuse
    names = list(CASES)
    chosen = [names[int(c)] if c.isdigit() else c for c in a.cases] or names
    print(f"load average at start: {open('/proc/loadavg').read().split()[:3]}")
    print(
        "| case | fix | fix: graphs/breaks/recompiles before → after | verdict | by hand: graphs/breaks/recompiles | agree |"
    )
    print("|---|---|---|---|---|---|")
    for name in chosen:
        for row in run_case(name, Path(a.out) / f"case{names.index(name)}", a.reuse, a.fix_only):
            print(row, flush=True)
    print(f"load average at end: {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
