"""The `peak_memory` budget's own cost: the same compile + calls with and without a memory cap.

In one process, each round runs four variants of one block, in rotated order so that the
machine's noise hits them alike: `plain` (no budget), `counts` (`fxlens.expect` with count
budgets only), `memory` (the same with `peak_memory=`: torch's profiler recording allocation
events only runs over the block, compiling included) and `profiler` (count budgets around the
public `torch.profiler.profile(profile_memory=True)`, which also records every op: what the
`peak_memory` budget ran before, kept here to compare in the same rounds). The block resets Dynamo, compiles a small MLP training
step (`torch.compile(..., backend=B)`) and runs N forward + backward calls. Reported: median CPU
time (`time.process_time`) and wall time per variant, and memory / counts (the cap's own cost),
for the compile-heavy block (N small) and the call-heavy block (N large), per backend. The peaks
the `memory` and `profiler` blocks measured are printed too: the cheaper measurement must agree.

Usage: python bench/memory_budget.py [--rounds N] [--backends aot_eager,inductor] [--write]
(--write replaces the first table of its BENCHMARKS.md section; the load line under it is by hand)
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
from benchmarks_md import write_table
from torch.profiler import ProfilerActivity, profile

import fxlens

VARIANTS = ("plain", "counts", "memory", "profiler")


def running_peak(events) -> int:
    """The public profiler's peak: the running sum of its CPU memory events, in time order."""
    level = peak = 0
    mem = [e for e in events if e.name() == "[memory]" and "CPU" in str(e.device_type())]
    for e in sorted(mem, key=lambda e: e.start_ns()):
        level += e.nbytes()
        peak = max(peak, level)
    return peak


def block(backend: str, calls: int) -> None:
    torch._dynamo.reset()  # every variant compiles from scratch
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.Linear(512, 256))
    f = torch.compile(net, backend=backend)
    x = torch.randn(64, 256)
    for _ in range(calls):
        f(x).square().mean().backward()


def run_variant(variant: str, backend: str, calls: int) -> tuple[float, float, int | None]:
    """(CPU s, wall s, measured peak bytes or None) of one block."""
    t0, w0 = time.process_time(), time.perf_counter()
    peak = None
    if variant == "plain":
        block(backend, calls)
    elif variant == "counts":
        with fxlens.expect(graphs=64, recompiles=64):
            block(backend, calls)
    elif variant == "memory":
        with fxlens.expect(graphs=64, recompiles=64, peak_memory="64GiB") as got:
            block(backend, calls)
        peak = got.outcome.memory["peak"] if got.outcome and got.outcome.memory else None
    else:
        with fxlens.expect(graphs=64, recompiles=64):
            with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
                block(backend, calls)
        peak = running_peak(prof.profiler.kineto_results.events())
    return time.process_time() - t0, time.perf_counter() - w0, peak


def measure(backend: str, calls: int, rounds: int) -> dict:
    times = {k: {v: [] for v in VARIANTS} for k in ("cpu", "wall")}
    peaks: dict[str, list[int]] = {"memory": [], "profiler": []}
    run_variant("plain", backend, calls)  # warm-up: imports, the first compile's one-off costs
    for r in range(rounds):
        order = VARIANTS[r % len(VARIANTS) :] + VARIANTS[: r % len(VARIANTS)]
        for v in order:
            cpu, wall, peak = run_variant(v, backend, calls)
            times["cpu"][v].append(cpu)
            times["wall"][v].append(wall)
            if peak is not None:
                peaks[v].append(peak)
    return {"times": times, "peaks": peaks}


def rows(results: list[tuple[str, int, dict]]) -> str:
    out = [
        "| backend | calls | time | rounds | plain (median s) | counts only | peak_memory | / counts "
        "| public profiler (before) | / counts |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for backend, calls, res in results:
        for kind in ("cpu", "wall"):
            t = res["times"][kind]
            med = {v: statistics.median(t[v]) for v in VARIANTS}
            out.append(
                f"| {backend} | {calls} | {kind} | {len(t['plain'])} | {med['plain']:.3f} | {med['counts']:.3f} "
                f"| {med['memory']:.3f} | {med['memory'] / med['counts']:.3f}x "
                f"| {med['profiler']:.3f} | {med['profiler'] / med['counts']:.3f}x |"
            )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--backends", default="aot_eager,inductor")
    ap.add_argument("--calls", default="2,200", help="calls per block: compile-heavy, call-heavy")
    ap.add_argument("--write", action="store_true", help="write the table into BENCHMARKS.md")
    ap.add_argument("--heading", default="peak_memory budget: the measurement's own cost")
    args = ap.parse_args()
    torch.set_num_threads(1)  # one intra-op thread: CPU time is then this block's work only
    load0 = os.getloadavg()
    results = []
    for backend in args.backends.split(","):
        for calls in map(int, args.calls.split(",")):
            res = measure(backend, calls, args.rounds)
            results.append((backend, calls, res))
            for v, got in res["peaks"].items():
                print(backend, calls, v, "peaks (bytes):", sorted(set(got)), flush=True)
    load1 = os.getloadavg()
    md = rows(results)
    load = (
        f"load average (1, 5, 15 min) {load0[0]:.1f}/{load0[1]:.1f}/{load0[2]:.1f} at the start, "
        f"{load1[0]:.1f}/{load1[1]:.1f}/{load1[2]:.1f} at the end, on 2 cores"
    )
    print(md)
    print(load)
    if args.write:  # the section's first table and its load line; the prose stays
        write_table(args.heading, md)


if __name__ == "__main__":
    main()
