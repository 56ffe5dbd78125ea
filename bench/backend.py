"""fxlens backend vs eager vs inductor: kernel counts, bytes moved, compile time (CPU, Triton interpreter).

    python bench/backend.py            # print the table
    python bench/backend.py --write    # also write it to the `## Backend` section of BENCHMARKS.md

Counts:
- eager: ATen ops dispatched (views and other metadata-only ops excluded), bytes = their tensor
  inputs + outputs.
- fxlens: Triton kernels (+ ATen externs, listed separately), bytes = sum of the kernels'
  bytes_read + bytes_written plus the externs' tensor arguments and results (inductor's
  num_bytes_accessed also counts its extern calls).
- inductor: `cpu_backend="triton"` under TRITON_INTERPRET=1 with the backend hash stubbed;
  `metrics.generated_kernel_count` and `num_bytes_accessed` recorded at codegen. The backward is
  lowered eagerly (force_non_lazy_backward_lowering) so training counts do not depend on running
  inductor's kernels, some of which call libdevice and cannot run in the interpreter.
Compile time: Dynamo's `_compile.compile_inner` total (tracing, AOTAutograd, the backend), with the
backward lowered in the same window for both backends (force_non_lazy_backward_lowering).
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported (inductor's kernels need it)

import argparse  # noqa: E402
import copy  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402
import torch._functorch.config  # noqa: E402,F401
import torch.nn.functional as F  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "backend"))
import backend_cases  # noqa: E402
from benchmarks_md import write_section  # noqa: E402
from models import MLP, Block, ConvNet, RMSNorm  # noqa: E402

_META_OPS = {"view", "_unsafe_view", "reshape", "permute", "expand", "squeeze", "unsqueeze", "slice", "select",
             "as_strided", "t", "transpose", "alias", "detach", "split", "split_with_sizes", "unbind", "lift_fresh",
             "_to_copy_noop", "empty", "empty_like", "empty_strided", "zeros", "ones", "full", "scalar_tensor",
             "_local_scalar_dense", "sym_size", "sym_stride", "sym_numel", "is_same_size"}  # fmt: skip


class _Count(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.kernels = 0
        self.bytes = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func.overloadpacket.__name__.rstrip("_") not in _META_OPS:
            self.kernels += 1
            ts = [
                a for a in torch.utils._pytree.tree_leaves((args, kwargs, out)) if isinstance(a, torch.Tensor)
            ]
            self.bytes += sum(t.numel() * t.element_size() for t in ts)
        return out


def _cases():
    torch.manual_seed(0)
    x64 = torch.randn(64, 256)
    yield (
        "bias+GELU+residual",
        (lambda x, b, r: F.gelu(x + b) + r),
        (x64, torch.randn(256), torch.randn(64, 256)),
        True,
    )
    yield "RMSNorm", RMSNorm(256), (x64,), True
    ln = torch.nn.LayerNorm(256)
    yield "LayerNorm", ln, (x64,), True
    yield "softmax", (lambda x: torch.softmax(x, -1)), (x64,), True
    yield "cross-entropy", F.cross_entropy, (torch.randn(64, 100), torch.randint(0, 100, (64,))), True
    yield "MLP", MLP(256, 512, 64), (x64,), True
    yield "GPT-2 block", Block(64, 4, 32), (torch.randn(2, 32, 64),), True
    yield "conv net", ConvNet(), (torch.randn(4, 3, 8, 8),), True


def _adamw():
    torch.manual_seed(0)
    m = MLP(64, 128, 16)
    for p in m.parameters():
        p.grad = torch.randn_like(p)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    return opt


def _run(fn, args, train: bool):
    args = [a.detach().clone().requires_grad_(train and a.is_floating_point()) for a in args]
    out = fn(*args)
    if train:
        (out.float().square().sum() if out.dim() else out).backward()
    return out


def _eager(fn, args, train):
    mode = _Count()
    with mode:
        if train:
            _run(fn, args, True)
        else:
            with torch.no_grad():
                _run(fn, args, False)
    return mode.kernels, mode.bytes


def _fxlens(fn, args, train, dynamic=False, more=()):
    """Compile (dynamic=True: once, then run at the other input sets `more` too) and count."""
    from fxlens.backend import compile_fx

    torch._functorch.config.force_non_lazy_backward_lowering = True  # backward compiled in the same window
    torch._dynamo.reset()
    compile_fx.COMPILED.clear()
    _compile_times().clear()
    cfn = torch.compile(fn, backend="fxlens", dynamic=dynamic)
    ctx = torch.enable_grad() if train else torch.no_grad()
    with ctx:
        for a in (args, *more):
            _run(cfn, a, train)  # compiles forward and backward, runs once per input set
    graphs = list(compile_fx.COMPILED)
    kernels = sum(len(g.kernels) for g in graphs)
    externs = sum(sum(g.fallbacks.values()) for g in graphs)
    nbytes = sum(k["bytes_read"] + k["bytes_written"] for g in graphs for k in g.kernels)
    nbytes += sum(g.extern_bytes for g in graphs)  # inductor's count includes its extern calls too
    reread = sum(k.get("bytes_reread", 0) for g in graphs for k in g.kernels)
    return kernels, externs, nbytes, _compile_seconds(), reread, _compiles()


def _compile_times() -> dict:
    from torch._dynamo.utils import compilation_time_metrics

    return compilation_time_metrics


def _compiles() -> int:
    """Frames Dynamo compiled (a dynamic=True run at two batch sizes should compile once)."""
    return len(_compile_times().get("_compile.compile_inner", []))


def _compile_seconds() -> float:
    """Dynamo's whole compile (tracing + AOTAutograd + the backend, forward and backward)."""
    return float(sum(_compile_times().get("_compile.compile_inner", [])))


def _inductor(fn, args, train, dynamic=False, more=()):
    import torch._inductor.config as ic
    import torch.utils._triton as ut
    from torch._inductor import metrics

    ic.cpu_backend = "triton"
    ic.force_disable_caches = True  # a cache hit skips codegen, and with it the counts
    torch._logging.set_logs(inductor_metrics=True)  # num_bytes_accessed is only counted with this log on
    ut.triton_hash_with_backend = lambda: "fxlens-bench-cpu-interpreter"
    torch._functorch.config.force_non_lazy_backward_lowering = True
    torch._dynamo.reset()
    metrics.reset()
    _compile_times().clear()
    cfn = torch.compile(fn, backend="inductor", dynamic=dynamic)
    ctx = torch.enable_grad() if train else torch.no_grad()
    ran = True
    for a in (args, *more):
        try:
            with ctx:
                _run(cfn, a, train)
        except Exception:  # its kernels compiled (and were counted); running them needs libdevice
            ran = False
    counts = metrics.generated_kernel_count, metrics.num_bytes_accessed, _compile_seconds(), ran
    return counts + (_compiles(),)


def _row(case, mode, eager, fx, ind) -> dict:
    (ek, eb), (fk, fx_ext, fb, fc, rr, fcomp), (ik, ib, ic_, ran, icomp) = eager, fx, ind
    return dict(case=case, mode=mode, eager_k=ek, eager_b=eb, fx_k=fk, fx_ext=fx_ext, fx_b=fb, fx_c=fc,
                fx_reread=rr, fx_compiles=fcomp, ind_k=ik, ind_b=ib, ind_c=ic_, ind_ran=ran,
                ind_compiles=icomp)  # fmt: skip


def _copies(fn):
    if isinstance(fn, torch.nn.Module):
        return fn, copy.deepcopy(fn), copy.deepcopy(fn)
    return fn, fn, fn


def _emit(rows: list, row: dict) -> None:
    rows.append(row)
    print(_fmt_row(row), flush=True)


def measure(only: str = "") -> list[dict]:
    """Every case (or those whose name contains `only`), forward and training, side by side."""
    rows: list[dict] = []
    for name, fn, args, _ in _cases():
        if only.lower() not in name.lower():
            continue
        for train in (False, True):
            fn_e, fn_f, fn_i = _copies(fn)
            mode = "training" if train else "forward"
            _emit(rows, _row(name, mode, _eager(fn_e, args, train), _fxlens(fn_f, args, train),
                             _inductor(fn_i, args, train)))  # fmt: skip
    if only.lower() in "adamw step":  # parameters updated in place
        opt_e, opt_f, opt_i = _adamw(), _adamw(), _adamw()
        _emit(rows, _row("AdamW step", "step", _eager(opt_e.step, (), False), _fxlens(opt_f.step, (), False),
                         _inductor(opt_i.step, (), False)))  # fmt: skip
    rows += measure_fusion(only)
    return rows


def measure_fusion(only: str = "") -> list[dict]:
    """Issue 11's fusion cases: forward, training, and training with dynamic=True at two batch sizes
    (one compile serves both; bytes are counted at the first batch's sizes)."""
    rows: list[dict] = []
    for name, factory, make, (b1, b2) in backend_cases.cases():
        if only.lower() not in name.lower():
            continue
        torch.manual_seed(0)
        fn = factory()
        args, args2 = make(b1, False), make(b2, False)
        for mode in ("forward", "training", f"training, dynamic=True (batch {b1}, {b2})"):
            train, dyn = mode != "forward", "dynamic" in mode
            more = (args2,) if dyn else ()
            fn_e, fn_f, fn_i = _copies(fn)
            _emit(rows, _row(name, mode, _eager(fn_e, args, train), _fxlens(fn_f, args, train, dyn, more),
                             _inductor(fn_i, args, train, dyn, more)))  # fmt: skip
    if only.lower() in "adam step (foreach=false)":
        opt_e, opt_f, opt_i = backend_cases.adam(), backend_cases.adam(), backend_cases.adam()
        _emit(rows, _row("Adam step (foreach=False)", "step", _eager(opt_e.step, (), False),
                         _fxlens(opt_f.step, (), False), _inductor(opt_i.step, (), False)))  # fmt: skip
    return rows


HEADER = (
    "| case | mode | eager kernels | fxlens Triton kernels (+externs) | inductor Triton kernels | eager bytes | "
    "fxlens bytes | inductor bytes | fxlens/inductor bytes | fxlens re-read bytes | compiles fxlens / inductor | "
    "compile s fxlens | compile s inductor |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def _fmt_row(r: dict) -> str:
    ratio = f"{r['fx_b'] / r['ind_b']:.2f}" if r["ind_b"] else "n/a"
    ind_c = f"{r['ind_c']:.2f}" + ("" if r["ind_ran"] else "*")
    return (
        f"| {r['case']} | {r['mode']} | {r['eager_k']} | {r['fx_k']} (+{r['fx_ext']}) | {r['ind_k']} | {r['eager_b']} | "
        f"{r['fx_b']} | {r['ind_b']} | {ratio} | {r['fx_reread']} | {r['fx_compiles']} / {r['ind_compiles']} | "
        f"{r['fx_c']:.2f} | {ind_c} |"
    )


def _summary(rows: list[dict]) -> str:
    n = len(rows)
    k_ok = [r for r in rows if r["fx_k"] <= r["ind_k"]]
    b_ok = [r for r in rows if r["ind_b"] and r["fx_b"] <= 1.05 * r["ind_b"]]
    c_ok = [r for r in rows if r["fx_c"] <= r["ind_c"]]
    k_over = ", ".join(f"{r['case']} {r['mode']} {r['fx_k']} vs {r['ind_k']}" for r in rows if r not in k_ok)
    over = ", ".join(
        f"{r['case']} {r['mode']} " + (f"{r['fx_b'] / r['ind_b']:.2f}x" if r["ind_b"] else "inductor 0 bytes")
        for r in rows
        if r not in b_ok
    )
    return (
        f"Targets: Triton kernel count <= inductor's on {len(k_ok)}/{n} cases"
        + (f" (over: {k_over})" if k_over else "")
        + f"; bytes within 5% of inductor's (or fewer) on {len(b_ok)}/{n}"
        + (f" (over: {over})" if over else "")
        + f"; compile time <= inductor's on "
        f"{len(c_ok)}/{n}. "
        "bench/gpu.py (CUDA timings) has not been run: no GPU was lent to this task."
    )


def section(rows: list[dict]) -> str:
    """The `## Backend` section of BENCHMARKS.md for these rows."""
    table = "\n".join([HEADER] + [_fmt_row(r) for r in rows])
    return (
        "## Backend\n\n"
        "`python bench/backend.py --write` (2-core CPU box shared with other work, torch 2.13 CPU, triton 3.9,\n"
        "all Triton kernels under the interpreter). Kernel and byte counts are exact; compile times are\n"
        "noisy. `*`: inductor's compiled code could not run in the interpreter (libdevice calls); its\n"
        "counts are from codegen. Compile time is Dynamo's compile_inner (forward and backward) for both.\n"
        "Externs (matmul, convolution, attention,\n"
        "unlowered ops) are ATen calls between fxlens's kernels.\n\n"
        "The rows from `LayerNorm, 16k-column rows` on are issue 11's fusion cases (`bench/backend_cases.py`):\n"
        "rows longer than `FXLENS_PERSISTENT_RMAX` (1024) and rows of symbolic length reduce in loops over\n"
        "the row. `fxlens bytes` counts each buffer once per kernel, as inductor's `num_bytes_accessed` does;\n"
        "`fxlens re-read bytes` is what later loops of a looped reduction read again (the two-pass variance,\n"
        "softmax's max/sum/normalize passes, values recomputed in a later loop), not included in the ratio.\n"
        "`dynamic=True` rows: compiled once and run at both batch sizes; bytes at the first batch's sizes;\n"
        "`compiles` counts the frames Dynamo compiled (the optimizer steps compile more than one).\n\n"
        + table
        + "\n\n"
        + _summary(rows)
        + "\n"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="write the table into BENCHMARKS.md")
    ap.add_argument("--only", default="", help="only the cases whose name contains this (not with --write)")
    a = ap.parse_args()
    if a.write and a.only:
        ap.error("--write records every case: drop --only")
    print(HEADER)
    rows = measure(a.only)
    text = section(rows)
    if a.write:
        write_section("Backend", text)


if __name__ == "__main__":
    main()
