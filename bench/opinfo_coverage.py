"""op_db coverage of the fxlens backend: which OpInfos compile to Triton kernels, which run only as
ATen fallbacks (CPU, float32, forward, the first samples of each op, Triton interpreter).

    python bench/opinfo_coverage.py --out cov.jsonl [--shard 0/2] [--samples 2] [--ops add,sin]
    python bench/opinfo_coverage.py --report cov.jsonl [cov2.jsonl ...] [--md bench/opinfo_coverage.md]

Per op, over its samples (each compiled with `torch.compile(backend="fxlens")` after a Dynamo reset):
- kernel: at least one Triton kernel was generated;
- fallback: only ATen externs ran (no kernel) -- what issue 11 counts;
- none: no kernel and no fallback (views, aliases, constants: nothing to compute);
- eager: Dynamo compiled no graph (it ran the op eagerly, e.g. a graph break on a data-dependent op);
- wrong: a result differs from eager beyond the tolerance below (NaN where eager has NaN is equal);
- error: compiling or running raised (eager itself working).
Ops whose eager samples all raise, or that do not support float32 on CPU, are `skipped`.
Random ops (eager differs between two seeds) and `empty*` ops (uninitialized memory) are compared by
shape and dtype only.
Tolerance: torch.testing.assert_close's float32 default (rtol 1.3e-6, atol 1e-5) unless the OpInfo
declares a larger one for float32 (`op.decorators` tolerance overrides are not read: kept simple);
integers and bools exact. Importable: `measure(op, samples)` returns one op's record.
"""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")

import argparse  # noqa: E402
import collections  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import torch  # noqa: E402

RANK = {"error": 0, "wrong": 1, "kernel": 2, "fallback": 3, "eager": 4, "none": 5}
# ops whose result is uninitialized memory: compared by shape and dtype only, like random ops
UNINITIALIZED = {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "empty_permuted"}


def _clone(x):
    return torch.utils._pytree.tree_map(lambda t: t.clone() if isinstance(t, torch.Tensor) else t, x)


def _close(out, ref) -> str | None:
    """None when `out` matches `ref`, else a short reason."""
    fo, so = torch.utils._pytree.tree_flatten(out)
    fr, sr = torch.utils._pytree.tree_flatten(ref)
    if so != sr or len(fo) != len(fr):
        return "structure differs"
    for a, b in zip(fo, fr, strict=True):
        if not isinstance(b, torch.Tensor):
            if a != b and not (isinstance(a, float) and a != a and b != b):
                return f"scalar {a} != {b}"
            continue
        if not isinstance(a, torch.Tensor) or a.shape != b.shape or a.dtype != b.dtype:
            return f"shape/dtype {getattr(a, 'shape', a)} vs {b.shape} {b.dtype}"
        try:
            torch.testing.assert_close(a, b, equal_nan=True, check_stride=False)
        except AssertionError as e:
            lines = [ln for ln in str(e).splitlines() if "difference" in ln]
            return "; ".join(lines)[:200] or "mismatch"
    return None


def _shapes(x):
    return torch.utils._pytree.tree_map(
        lambda t: (tuple(t.shape), t.dtype) if isinstance(t, torch.Tensor) else type(t).__name__, x
    )


def _is_random(op, sample) -> bool:
    outs = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        outs.append(op(_clone(sample.input), *_clone(sample.args), **_clone(sample.kwargs)))
    return _close(outs[0], outs[1]) is not None


def measure_sample(op, sample) -> dict:
    """One sample: {status, kernels, fallbacks: {op: n}, detail}."""
    from fxlens.backend import compile_fx

    ref = op(_clone(sample.input), *_clone(sample.args), **_clone(sample.kwargs))
    random = op.name in UNINITIALIZED or _is_random(op, sample)

    def fn(inp, args, kwargs):
        return op(inp, *args, **kwargs)

    torch._dynamo.reset()
    compile_fx.COMPILED.clear()
    rec = {"kernels": 0, "fallbacks": {}, "detail": ""}
    try:
        out = torch.compile(fn, backend="fxlens")(
            _clone(sample.input), _clone(sample.args), _clone(sample.kwargs)
        )
    except Exception as e:  # noqa: BLE001 - a measurement: record every failure
        rec.update(status="error", detail=f"{type(e).__name__}: {str(e).splitlines()[0][:200]}")
        return rec
    graphs = list(compile_fx.COMPILED)
    for g in graphs:
        rec["kernels"] += len(g.kernels)
        for k, v in g.fallbacks.items():
            rec["fallbacks"][k] = rec["fallbacks"].get(k, 0) + v
    bad = _close(_shapes(out), _shapes(ref)) if random else _close(out, ref)
    if bad:
        rec.update(status="wrong", detail=bad)
    elif not graphs:
        rec["status"] = "eager"
    elif rec["kernels"]:
        rec["status"] = "kernel"
    else:
        rec["status"] = "fallback" if rec["fallbacks"] else "none"
    rec["random"] = random
    return rec


def measure(op, samples: int = 2) -> dict:
    """One OpInfo's record: its status (the worst over its samples, kernel before fallback) and the
    ATen ops that fell back."""
    name = op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")
    rec = {"op": name, "status": "skipped", "kernels": 0, "fallbacks": {}, "detail": "", "seconds": 0.0}
    if torch.float32 not in op.supported_dtypes("cpu"):
        rec["detail"] = "no float32 on CPU"
        return rec
    t0 = time.perf_counter()
    stats = []
    try:
        it = op.sample_inputs("cpu", torch.float32, requires_grad=False)
        for sample in it:
            if len(stats) >= samples:
                break
            try:
                stats.append(measure_sample(op, sample))
            except Exception as e:  # noqa: BLE001 - eager itself fails on this sample
                rec["detail"] = f"eager: {type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''}"
    except Exception as e:  # noqa: BLE001
        rec["detail"] = f"samples: {type(e).__name__}"
    rec["seconds"] = round(time.perf_counter() - t0, 2)
    if not stats:
        return rec
    worst = min(stats, key=lambda s: RANK[s["status"]])
    rec["status"] = worst["status"]
    rec["detail"] = worst["detail"]
    rec["random"] = any(s.get("random") for s in stats)
    for s in stats:
        rec["kernels"] += s["kernels"]
        for k, v in s["fallbacks"].items():
            rec["fallbacks"][k] = rec["fallbacks"].get(k, 0) + v
    return rec


def run(out: str, shard: tuple[int, int], samples: int, names: set[str] | None) -> None:
    from torch.testing._internal.common_methods_invocations import op_db

    import fxlens.backend.compile_fx  # noqa: F401 - registers everything before timing starts

    warnings.filterwarnings("ignore")
    torch._logging.set_logs(dynamo=logging.ERROR)
    done = set()
    if os.path.exists(out):
        with open(out) as f:
            done = {json.loads(ln)["op"] for ln in f if ln.strip()}
    k, n = shard
    with torch._dynamo.config.patch(recompile_limit=64), open(out, "a") as f:
        for i, op in enumerate(op_db):
            name = op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")
            if i % n != k or name in done or (names and op.name not in names and name not in names):
                continue
            rec = measure(op, samples)
            f.write(json.dumps(rec) + "\n")
            f.flush()
            print(f"{rec['status']:8} {rec['seconds']:6.1f}s {name} {rec['detail'][:80]}", flush=True)


def load(paths: list[str]) -> dict[str, dict]:
    recs = {}
    for p in paths:
        with open(p) as f:
            for ln in f:
                if ln.strip():
                    r = json.loads(ln)
                    recs[r["op"]] = r
    return recs


def summary(recs: dict[str, dict]) -> dict:
    """Counts per status, the fallback-only share of the measured ops, and the fallback-only ops
    grouped by the ATen op that fell back."""
    counts = collections.Counter(r["status"] for r in recs.values())
    measured = sum(v for k, v in counts.items() if k != "skipped")
    groups = collections.defaultdict(list)
    for r in recs.values():
        if r["status"] == "fallback":
            for aten_op in r["fallbacks"]:
                groups[aten_op].append(r["op"])
    return {
        "counts": dict(counts),
        "measured": measured,
        "fallback_share": counts["fallback"] / max(measured, 1),
        "groups": dict(sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))),
    }


# (group, regex over the ATen op that fell back) -- for the before/after table; first match wins
GROUPS = [
    (
        "matmul, convolution (externs by design)",
        r"aten\.(mm|addmm|bmm|addbmm|addmv|convolution)\.|linear_cross_entropy",
    ),
    ("linear algebra (externs by design)", r"linalg|cholesky|lu_|geqrf|ormqr|triangular_solve|svd|eig"),
    ("complex numbers", r"complex|polar"),
    ("special polynomials", r"polynomial"),
    (
        "elementwise math (trig, gamma, erf, bessel, zeta, round, pow, ...)",
        r"aten\.(a?sinh?|a?cosh?|a?tanh?|atan2|erfc|erfinv|lgamma|digamma|polygamma|round|pow|hypot|copysign"
        r"|nextafter|signbit|log10|fmax|fmin|angle|i0|frexp|ldexp|igammac?)\.|special_",
    ),
    ("sort, topk, kthvalue, median, mode", r"sort|topk|kthvalue|median|mode"),
    ("cummax, cummin, logcumsumexp", r"cummax|cummin|logcumsumexp"),
    ("scatter/index/segment reductions, put, masked_scatter", r"scatter|index_reduce|segment_reduce|\.put\."),
    ("pooling, sampling", r"pool|grid_sampler|upsample"),
    ("other", r"."),
]


def group_counts(recs: dict[str, dict]) -> dict[str, list[str]]:
    """Fallback-only ops by group (of the first ATen op that fell back)."""
    import re

    out: dict[str, list[str]] = {g: [] for g, _ in GROUPS}
    for r in recs.values():
        if r["status"] == "fallback":
            first = sorted(r["fallbacks"])[0]
            out[next(g for g, rx in GROUPS if re.search(rx, first))].append(r["op"])
    return out


def benchmarks_section(before: dict[str, dict], after: dict[str, dict]) -> str:
    """The `op_db coverage` section of BENCHMARKS.md: before/after totals and per group."""
    sb, sa = summary(before), summary(after)
    gb, ga = group_counts(before), group_counts(after)
    lines = [
        "`python bench/opinfo_coverage.py --out after.jsonl` (every OpInfo of op_db, CPU float32, forward,"
        ' the first 2 samples, `backend="fxlens"` under the Triton interpreter, compared with eager at'
        " assert_close's fp32 tolerance); `--report after.jsonl --before before.jsonl --md"
        " bench/opinfo_coverage.md --write` writes this section and the per-op table"
        ' ([bench/opinfo_coverage.md](bench/opinfo_coverage.md)). "fallback" = no Triton kernel, only'
        " ATen calls.",
        "",
        "| | ops measured | kernel | fallback only | no graph (eager) | nothing to compute | error | wrong |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, s in (("before", sb), ("after", sa)):
        c = s["counts"]
        lines.append(
            f"| {label} | {s['measured']} | {c.get('kernel', 0)} | {c.get('fallback', 0)}"
            f" ({100 * s['fallback_share']:.1f}%) | {c.get('eager', 0)} | {c.get('none', 0)}"
            f" | {c.get('error', 0)} | {c.get('wrong', 0)} |"
        )
    lines += ["", "| fallback-only ops by group | before | after |", "|---|---|---|"]
    for g, _ in GROUPS:
        lines.append(f"| {g} | {len(gb[g])} | {len(ga[g])} |")
    return "\n".join(lines) + "\n"


def markdown(recs: dict[str, dict], before: dict[str, dict] | None = None) -> str:
    s = summary(recs)
    c = s["counts"]
    lines = [
        "# op_db coverage of the fxlens backend",
        "",
        "Generated by `python bench/opinfo_coverage.py --report ... --md bench/opinfo_coverage.md`:",
        "every OpInfo of torch's op_db, CPU float32, forward, the first 2 samples, compiled with",
        '`backend="fxlens"` (Triton interpreter) and compared with eager (see the script\'s docstring).',
        "",
        f"{s['measured']} ops measured; fallback only: {c.get('fallback', 0)} "
        f"({100 * s['fallback_share']:.1f}%); "
        + ", ".join(f"{k} {v}" for k, v in sorted(c.items(), key=lambda kv: -kv[1])),
        "",
        "Status: kernel (at least one Triton kernel), fallback (only ATen calls), none (nothing to compute:",
        "views, aliases), eager (Dynamo compiled no graph), error, wrong (differs from eager), skipped (no",
        "float32 on CPU, or eager fails on every sample). `before` is the status at the start of issue 11.",
        "",
        "| op | before | status | kernels | ATen fallbacks | detail |",
        "|---|---|---|---|---|---|",
    ]
    for name in sorted(recs):
        r = recs[name]
        fb = ", ".join(f"{k.replace('aten.', '')} {v}" for k, v in sorted(r["fallbacks"].items()))
        det = r["detail"].replace("|", "\\|").replace("\n", " ")[:100]
        was = before[name]["status"] if before and name in before else ""
        lines.append(f"| {name} | {was} | {r['status']} | {r['kernels']} | {fb} | {det} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="opinfo_coverage.jsonl")
    ap.add_argument("--shard", default="0/1")
    ap.add_argument("--samples", type=int, default=2)
    ap.add_argument("--ops", default="")
    ap.add_argument("--report", nargs="*")
    ap.add_argument("--md", default="")
    ap.add_argument("--before", default="", help="an earlier run: before/after columns and section")
    ap.add_argument("--write", action="store_true", help="write the op_db coverage section of BENCHMARKS.md")
    a = ap.parse_args()
    if a.report:
        recs = load(a.report)
        before = load([a.before]) if a.before else None
        s = summary(recs)
        print(json.dumps({k: v for k, v in s.items() if k != "groups"}, indent=1))
        for op, names in s["groups"].items():
            print(f"{len(names):4} {op}: {', '.join(names)}")
        if a.md:
            with open(a.md, "w") as f:
                f.write(markdown(recs, before))
        if before is not None:
            text = benchmarks_section(before, recs)
            print(text)
            if a.write:
                from benchmarks_md import write_section

                write_section("op_db coverage", text)
        return
    k, n = (int(x) for x in a.shard.split("/"))
    run(a.out, (k, n), a.samples, set(a.ops.split(",")) if a.ops else None)


if __name__ == "__main__":
    main()
