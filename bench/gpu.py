"""GPU check: correctness and steady-state time of eager, inductor and fxlens on the backend suite.

    python bench/gpu.py                 # on a CUDA machine (torch >= 2.11, triton >= 3.6, no network)
    python bench/gpu.py --out gpu.md    # also write the markdown table to a file
    python bench/gpu.py --dry-run       # CPU: tiny tensors, fxlens under Triton's interpreter

One run, one process, a wall-clock budget (default 420 s): cases that do not fit are reported as
skipped. Times are `triton.testing.do_bench` medians (ms) on CUDA; --dry-run uses a single timed
call (it only exercises the code path). fxlens is imported from this checkout if not installed.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import sys
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != str(Path(__file__).resolve().parent)]


def _import_fxlens():
    """`fxlens.backend` from the installed package, else from this checkout (no install needed)."""
    try:
        from fxlens.backend import registry  # noqa: F401
    except ImportError:
        for name, folder in (("fxlens", "toolkit"), ("fxlens.backend", "backend")):
            mod = types.ModuleType(name)
            mod.__path__ = [str(ROOT / folder)]
            sys.modules[name] = mod
    from fxlens.backend.registry import fxlens

    return fxlens


def _cases(dry: bool):
    import torch
    import torch.nn.functional as F

    sys.path.insert(0, str(ROOT / "tests" / "backend"))
    from models import MLP, Block, ConvNet, RMSNorm

    s = (lambda big, small: small) if dry else (lambda big, small: big)
    n, d = s(8192, 8), s(4096, 32)
    yield (
        "bias+GELU+residual",
        (lambda x, b, r: F.gelu(x + b) + r),
        lambda: (torch.randn(n, d), torch.randn(d), torch.randn(n, d)),
        True,
    )
    yield "RMSNorm", RMSNorm(d), lambda: (torch.randn(n, d),), True
    yield "LayerNorm", torch.nn.LayerNorm(d), lambda: (torch.randn(n, d),), True
    yield "softmax", (lambda x: torch.softmax(x, -1)), lambda: (torch.randn(n, d),), True
    v = s(8192, 10)
    yield (
        "cross-entropy",
        F.cross_entropy,
        lambda: (torch.randn(s(4096, 4), v), torch.randint(0, v, (s(4096, 4),))),
        True,
    )
    yield (
        "MLP",
        MLP(s(1024, 32), s(4096, 64), s(1024, 10)),
        lambda: (torch.randn(s(4096, 4), s(1024, 32)),),
        False,
    )
    yield (
        "GPT-2 block",
        Block(s(768, 32), s(12, 2), s(512, 8)),
        lambda: (torch.randn(s(8, 2), s(512, 8), s(768, 32)),),
        False,
    )
    yield "conv net", ConvNet(), lambda: (torch.randn(s(1024, 2), 3, 8, 8),), False
    # issue 11's fusion cases (bench/backend_cases.py; this script keeps bench/ off sys.path)
    spec = importlib.util.spec_from_file_location("backend_cases", ROOT / "bench" / "backend_cases.py")
    bc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bc)
    for name, factory, make, (b1, _) in bc.cases():
        torch.manual_seed(0)
        yield name, factory(), (lambda make=make, b1=b1: make(b1, not dry)), "MLP" not in name


def _to(obj, device):
    return obj.to(device) if hasattr(obj, "to") else obj


def _step(fn, args, train):
    import torch

    if not train:
        with torch.no_grad():
            return fn(*args), []
    args = [a.detach().requires_grad_(a.is_floating_point()) for a in args]
    out = fn(*args)
    out.float().square().mean().backward()
    return out, [a.grad for a in args if a.grad is not None]


def _bench(call, dry: bool) -> float:
    if dry:
        t0 = time.perf_counter()
        call()
        return (time.perf_counter() - t0) * 1e3
    from triton.testing import do_bench

    return float(do_bench(call, warmup=25, rep=100))


def _close(a, b, dtype) -> bool:
    import torch

    tol = {torch.float32: 2e-3, torch.float16: 2e-2, torch.bfloat16: 5e-2}.get(dtype, 1e-3)
    return bool(torch.allclose(a.float(), b.float(), atol=tol, rtol=tol))


def run(dry: bool, budget_s: float) -> list[dict]:
    import copy

    import torch

    fxlens_backend = _import_fxlens()
    device = "cpu" if dry else "cuda"
    if not dry and not torch.cuda.is_available():
        raise SystemExit("bench/gpu.py: no CUDA device (use --dry-run on CPU)")
    start = time.monotonic()
    rows = []
    for name, model, make_args, fused in _cases(dry):
        for train in (False, True):
            row = {"case": name, "mode": "training" if train else "forward", "fused": fused}
            rows.append(row)
            if time.monotonic() - start > budget_s:
                row["error"] = "skipped: time budget"
                print(_fmt(row), flush=True)  # reported, not dropped
                continue
            try:
                torch.manual_seed(0)
                args = [_to(a, device) for a in make_args()]
                fns = {}
                for backend in ("eager", "inductor", "fxlens"):
                    m = _to(copy.deepcopy(model), device) if isinstance(model, torch.nn.Module) else model
                    torch._dynamo.reset()
                    fns[backend] = m if backend == "eager" else torch.compile(
                        m, backend=fxlens_backend if backend == "fxlens" else "inductor")  # fmt: skip
                ref, ref_g = _step(fns["eager"], args, train)
                for backend in ("inductor", "fxlens"):
                    if dry and backend == "inductor":
                        continue  # inductor's CPU backend is C++, not what this script measures
                    t0 = time.perf_counter()
                    out, grads = _step(fns[backend], args, train)
                    row[f"{backend}_compile_s"] = time.perf_counter() - t0
                    row[f"{backend}_ok"] = _close(out, ref, ref.dtype) and all(
                        _close(g, r, r.dtype) for g, r in zip(grads, ref_g, strict=True))  # fmt: skip
                for backend in ("eager", "inductor", "fxlens"):
                    if dry and backend == "inductor":
                        continue
                    row[f"{backend}_ms"] = _bench(lambda f=fns[backend], a=args, t=train: _step(f, a, t), dry)
            except Exception as e:  # one case failing must not lose the run
                row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''}"
            print(_fmt(row), flush=True)
    return rows


def _fmt(r: dict) -> str:
    def ms(k):
        return f"{r[k]:.3f}" if k in r else "-"

    sp = lambda a, b: f"{r[a] / r[b]:.2f}x" if a in r and b in r and r[b] else "-"  # noqa: E731
    ok = {True: "ok", False: "MISMATCH"}.get(r.get("fxlens_ok"), "-")
    return (
        f"| {r['case']} | {r['mode']} | {ok} | {ms('eager_ms')} | {ms('inductor_ms')} | {ms('fxlens_ms')} | "
        f"{sp('eager_ms', 'fxlens_ms')} | {sp('inductor_ms', 'fxlens_ms')} | {r.get('error', '')} |"
    )


HEADER = (
    "| case | mode | fxlens correct | eager ms | inductor ms | fxlens ms | speedup vs eager | speedup vs inductor | note |\n"
    "|---|---|---|---|---|---|---|---|---|"
)


def summary(rows: list[dict]) -> str:
    def geo(xs):
        xs = [x for x in xs if x > 0]
        return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")

    both = [r for r in rows if "inductor_ms" in r and "fxlens_ms" in r]
    fused = [r for r in rows if r["fused"] and "eager_ms" in r and "fxlens_ms" in r]
    return (
        f"geomean fxlens speedup vs inductor: {geo([r['inductor_ms'] / r['fxlens_ms'] for r in both]):.2f}x "
        f"({len(both)} cases); vs eager on fused pointwise/reduction cases: "
        f"{geo([r['eager_ms'] / r['fxlens_ms'] for r in fused]):.2f}x ({len(fused)} cases)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dry-run", action="store_true", help="CPU, tiny tensors, fxlens under the interpreter")
    ap.add_argument("--budget", type=float, default=420.0, help="seconds before remaining cases are skipped")
    ap.add_argument("--out", help="also write the markdown table here")
    a = ap.parse_args()
    import torch

    print(
        f"torch {torch.__version__}, device {'cpu (dry run)' if a.dry_run else torch.cuda.get_device_name()}"
    )
    print(HEADER)
    rows = run(a.dry_run, a.budget)
    text = "\n".join([HEADER] + [_fmt(r) for r in rows]) + "\n\n" + summary(rows) + "\n"
    print(summary(rows))
    if a.out:
        Path(a.out).write_text(text)
    bad = [r for r in rows if r.get("fxlens_ok") is False]
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
