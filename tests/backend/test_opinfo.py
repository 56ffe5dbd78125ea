"""Every OpInfo of torch's op_db through `backend="fxlens"`, forward and backward, against eager.

Modelled on inductor's test_torchinductor_opinfo.py (see opinfo_check.py for the comparison). An
ATen fallback is not a failure; a crash, a wrong number, or an expected failure that passes is.

- default run: `SLICE`, ~40 representative ops, float32, the first 2 samples, forward and backward;
- `-m slow`: the whole sweep (every op, float32 plus the low-precision, integer and bool dtypes
  each OpInfo lists), in `CHUNKS` chunks so `-n 2` spreads it; it also rewrites the status table
  `opinfo_status.md` (kernel / fallback / expected failure per op and dtype) when all chunks ran;
- `python tests/backend/test_opinfo.py --write-status [--jobs 2]`: the same sweep and table,
  without pytest;
- `python tests/backend/test_opinfo.py --update-chunks 4,11 --note ...`: after a rerun of only those
  chunks of the slow sweep, replace their ops' rows in the table and recount (the note says so).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))

from opinfo_check import Result, check_op, opinfo_id, quiet, sweep_dtypes, sweep_limit  # noqa: E402

pytestmark = pytest.mark.triton

HERE = Path(__file__).parent
STATUS_FILE = HERE / "opinfo_status.md"
RESULTS_DIR = HERE / ".opinfo_results"  # one JSON per chunk of the slow sweep (gitignored)
CHUNKS = 24

# The default run: representative ops of every lowering family, plus the ones issue 11 found broken
SLICE = [
    "abs", "add", "mul", "div.no_rounding_mode", "div.floor_rounding", "remainder", "pow", "exp", "log1p",
    "sigmoid", "tanh", "nn.functional.gelu", "clamp", "where", "masked_fill", "eq", "bitwise_and",
    "sum", "mean", "amax", "argmax", "var_mean", "softmax", "log_softmax", "nn.functional.layer_norm",
    "cumsum", "flip", "index_select", "gather", "scatter_add", "index_put", "nn.functional.embedding",
    "nn.functional.max_pool2d", "nn.functional.avg_pool2d", "nn.functional.pad.constant", "cat",
    "transpose", "expand", "slice_scatter", "kron", "bfloat16", "cfloat", "linalg.inv", "mm",
]  # fmt: skip


def _op_db():
    from torch.testing._internal.common_methods_invocations import op_db

    return sorted(op_db, key=opinfo_id)


LOW = (torch.float16, torch.bfloat16)
INTS = (torch.int64, torch.int32, torch.int8, torch.uint8, torch.bool)


def sweep_items(op, index: int) -> list[tuple[torch.dtype, str]]:
    """(dtype, mode) pairs the slow sweep runs for the `index`-th op: float32 forward, float32
    backward when the op supports autograd, and one low-precision and one integer/bool dtype of
    those the op lists, rotating with the op's index (so each dtype is run on a share of the ops:
    all of them for every op is ~3x the time, FXLENS_OPINFO_DTYPES=all)."""
    dtypes = sweep_dtypes(op)
    items = [(torch.float32, "forward")] if torch.float32 in dtypes else []
    if op.supports_autograd and torch.float32 in op.supported_backward_dtypes("cpu"):
        items.append((torch.float32, "backward"))
    if os.environ.get("FXLENS_OPINFO_DTYPES") == "all":
        return items + [(dt, "forward") for dt in dtypes if dt != torch.float32]
    for family in (LOW, INTS):
        listed = [dt for dt in family if dt in dtypes]
        if listed:
            items.append((listed[index % len(listed)], "forward"))
    return items


def _check(op, dtype, mode, limit) -> Result:
    with quiet():
        return check_op(op, dtype, mode, limit)


def _problem(r: Result) -> str | None:
    if r.status in ("crash", "wrong"):
        return f"{r.op} {r.dtype} {r.mode}: {r.failure}"
    if r.status == "xpass":
        return f"{r.op} {r.dtype} {r.mode}: listed as an expected failure ({r.xfail}) but passes"
    return None


@pytest.mark.parametrize("name", SLICE)
def test_opinfo_slice(name):
    ops = [op for op in _op_db() if opinfo_id(op) == name]
    assert ops, f"{name} is not in op_db"
    op = ops[0]
    dtype = torch.float32 if torch.float32 in sweep_dtypes(op) else sweep_dtypes(op)[0]
    results = [_check(op, dtype, "forward", 2)]
    if op.supports_autograd and dtype == torch.float32:
        results.append(_check(op, torch.float32, "backward", 2))
    problems = [p for r in results if (p := _problem(r))]
    assert not problems, "\n".join(problems)
    assert results[0].samples > 0, f"{name}: eager rejected every sample"


def test_tie_order_of_index_outputs():
    """topk on int8 (many equal values): eager and fxlens may pick different indices of equal
    values, which torch leaves unspecified; the sweep found this as a "wrong number". Any index
    pointing at an equal value passes; one pointing at another value still fails."""
    from opinfo_check import _ties_only

    (op,) = [op for op in _op_db() if opinfo_id(op) == "topk"]
    r = _check(op, torch.int8, "forward", None)
    assert _problem(r) is None and r.samples > 0

    class Sample:
        input = torch.tensor([[3, 1, 3, 2], [5, 5, 0, 5]], dtype=torch.int8)
        args, kwargs = (2, 1), {}

    e = torch.tensor([[0, 2], [0, 1]])
    assert _ties_only(op, Sample, 1, torch.tensor([[2, 0], [3, 0]]), e)  # other equal values
    assert not _ties_only(op, Sample, 1, torch.tensor([[0, 3], [0, 1]]), e)  # 2, not 3
    assert not _ties_only(op, Sample, 0, torch.tensor([[2, 0], [3, 0]]), e)  # values are exact


def _chunk_ops(chunk: int) -> list:
    return [(i, op) for i, op in enumerate(_op_db()) if i % CHUNKS == chunk]


def run_chunk(chunk: int) -> list[Result]:
    out = []
    for index, op in _chunk_ops(chunk):
        for dtype, mode in sweep_items(op, index):
            out.append(_check(op, dtype, mode, sweep_limit(mode, dtype)))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_opinfo_sweep(chunk):
    t0 = time.perf_counter()
    results = run_chunk(chunk)
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / f"chunk_{chunk:02d}.json").write_text(
        json.dumps({"seconds": time.perf_counter() - t0, "results": [to_json(r) for r in results]})
    )
    problems = [p for r in results if (p := _problem(r))]
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems)


def to_json(r: Result) -> dict:
    return {
        "op": r.op, "dtype": str(r.dtype).removeprefix("torch."), "mode": r.mode, "status": r.status,
        "samples": r.samples, "skipped": r.skipped, "kernels": r.kernels, "fallbacks": dict(r.fallbacks),
        "failure": r.failure, "xfail": r.xfail, "seconds": round(r.seconds, 2),
    }  # fmt: skip


def write_status(
    records: list[dict], seconds: float | None = None, path: Path = STATUS_FILE, note: str = ""
) -> str:
    """The per-op status table (markdown) from the sweep's records; returns its summary line.

    Args:
        records: `to_json` of each (op, dtype, mode) result.
        seconds: the sweep's wall time, when it ran every chunk.
        path: where to write.
        note: a line saying what the records cover, when not the whole sweep.
    """
    from collections import Counter, defaultdict

    fw = Counter(r["status"] for r in records if r["mode"] == "forward")
    bw = Counter(r["status"] for r in records if r["mode"] == "backward")
    fw32 = Counter(r["status"] for r in records if r["mode"] == "forward" and r["dtype"] == "float32")
    by_op: dict = defaultdict(list)
    for r in records:
        by_op[r["op"]].append(r)

    def counts(c: Counter) -> str:
        return ", ".join(
            f"{k} {c[k]}" for k in ("kernel", "fallback", "xfail", "skip", "crash", "wrong", "xpass") if c[k]
        )

    summary = f"forward: {counts(fw)}; backward (float32): {counts(bw)}"
    lines = [
        "# fxlens OpInfo status",
        "",
        "Generated by `tests/backend/test_opinfo.py` (`pytest -m slow tests/backend/test_opinfo.py -n 2`, or",
        "`python tests/backend/test_opinfo.py --write-status`); do not edit by hand. One row per OpInfo of",
        "torch's op_db; per (dtype, mode): `kernel` (fxlens generated Triton for all of it), `fallback` (at",
        "least one ATen call between kernels), `xfail` (an expected failure listed in opinfo_xfail.py),",
        "`skip` (eager rejects every sample). Counts are per (op, dtype) pair.",
        "",
        *([f"- {note}"] if note else []),
        f"- {len(by_op)} ops; {summary}",
        f"- forward float32 only: {counts(fw32)}",
        *([f"- sweep wall time: {seconds / 60:.1f} min"] if seconds else []),
        "",
        "| op | float32 fwd | float32 bwd | other dtypes (fwd) | ATen fallbacks (float32) |",
        "|---|---|---|---|---|",
    ]
    for op in sorted(by_op):
        rs = by_op[op]
        f32 = next((r["status"] for r in rs if r["mode"] == "forward" and r["dtype"] == "float32"), "-")
        b32 = next((r["status"] for r in rs if r["mode"] == "backward"), "-")
        others = ", ".join(
            f"{r['dtype']} {r['status']}" for r in rs if r["mode"] == "forward" and r["dtype"] != "float32"
        )
        fb = sorted({k.removeprefix("aten.") for r in rs if r["dtype"] == "float32" for k in r["fallbacks"]})
        lines.append(f"| `{op}` | {f32} | {b32} | {others or '-'} | {', '.join(fb) or '-'} |")
    path.write_text("\n".join(lines) + "\n")
    return summary


def write_status_if_complete(since: float) -> None:
    """Write the status table when every chunk of the slow sweep has results and this session wrote
    some (a rerun of a few chunks updates theirs); the wall time only when it ran them all."""
    files = [RESULTS_DIR / f"chunk_{c:02d}.json" for c in range(CHUNKS)]
    if not all(f.exists() for f in files) or not any(f.stat().st_mtime >= since for f in files):
        return
    records = [r for f in files for r in json.loads(f.read_text())["results"]]
    full = all(f.stat().st_mtime >= since for f in files)
    write_status(records, time.time() - since if full else None)


def records_from_status(path: Path = STATUS_FILE) -> list[dict]:
    """The records a status table was written from, as far as it shows them (status per op, dtype
    and mode; the float32 ATen fallbacks on the float32 forward record, counts 1)."""
    out = []
    for line in path.read_text().splitlines():
        if not line.startswith("| `"):
            continue
        op, f32, b32, others, fb = (c.strip() for c in line.strip("|").split(" | "))
        op = op.strip("`")
        base = {"op": op, "samples": 0, "skipped": 0, "kernels": 0, "failure": None, "xfail": None}
        fbs = {} if fb == "-" else {f"aten.{k}": 1 for k in fb.split(", ")}
        if f32 != "-":
            out.append({**base, "dtype": "float32", "mode": "forward", "status": f32, "fallbacks": fbs})
        if b32 != "-":
            out.append({**base, "dtype": "float32", "mode": "backward", "status": b32, "fallbacks": {}})
        for entry in [] if others == "-" else others.split(", "):
            dt, st = entry.split(" ")
            out.append({**base, "dtype": dt, "mode": "forward", "status": st, "fallbacks": {}})
    return out


def update_status(chunks: list[int], note: str) -> list[str]:
    """Replace the status table's rows of the ops in `chunks` (their results in RESULTS_DIR, from a
    rerun of those chunks) and rewrite the counts; returns the rows that changed."""
    before = STATUS_FILE.read_text().splitlines()
    fresh = [
        r for c in chunks for r in json.loads((RESULTS_DIR / f"chunk_{c:02d}.json").read_text())["results"]
    ]
    ops = {r["op"] for r in fresh}
    records = [r for r in records_from_status() if r["op"] not in ops] + fresh
    old_note = next((ln[2:] for ln in before if ln.startswith("- ") and " ops; " not in ln[:12]), "")
    write_status(records, note=f"{old_note}. {note}" if old_note and note else old_note or note)
    after = set(STATUS_FILE.read_text().splitlines())
    return [ln for ln in sorted(after - set(before)) if ln.startswith("| `")]


def _main(argv: list[str]) -> int:
    import argparse
    import multiprocessing as mp

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write-status", action="store_true", help=f"run the sweep and write {STATUS_FILE.name}")
    ap.add_argument("--jobs", type=int, default=1, help="processes (the chunks are spread over them)")
    ap.add_argument(
        "--update-chunks",
        metavar="N,N",
        help=f"replace the rows of these chunks' ops in {STATUS_FILE.name} with their results in"
        f" {RESULTS_DIR.name}/ (from `pytest -m slow 'test_opinfo.py::test_opinfo_sweep[N]'`)",
    )
    ap.add_argument("--note", default="", help="with --update-chunks: what was rerun and why")
    args = ap.parse_args(argv)
    if args.update_chunks:
        try:
            changed = update_status([int(c) for c in args.update_chunks.split(",")], args.note)
        except (ValueError, FileNotFoundError) as e:
            print(f"error: --update-chunks: {e}", file=sys.stderr)
            return 2
        print("\n".join(changed) or "no row changed")
        return 0
    if not args.write_status:
        ap.print_help()
        return 2
    t0 = time.perf_counter()
    with mp.get_context("spawn").Pool(args.jobs) as pool:
        chunks = pool.map(_chunk_records, range(CHUNKS), chunksize=1)
    records = [r for c in chunks for r in c]
    print(write_status(records, time.perf_counter() - t0))
    bad = [r for r in records if r["status"] in ("crash", "wrong", "xpass")]
    for r in bad:
        print(f"{r['op']} {r['dtype']} {r['mode']}: {r['status']} {r['failure'] or r['xfail']}")
    return 1 if bad else 0


def _chunk_records(chunk: int) -> list[dict]:
    return [to_json(r) for r in run_chunk(chunk)]


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
