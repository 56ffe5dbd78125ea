"""Benchmark of `fxlens tui` on a large multi-rank trace; writes the `## TUI` section of BENCHMARKS.md.

1. A real TORCH_TRACE log of tests/tui/model_script.py (graph break, recompiles, kernel artifacts)
   is replicated with shifted frame ids into N rank files of ~MB/N each (the last rank from a run
   that compiles once more, so ranks diverge). Generated under /tmp, never committed.
2. Time to first paint: a fresh process runs the app headless (120x40) on the trace; measured from
   process spawn to the first rank's frames in the tree, and to everything loaded.
3. Keystroke latency: after loading, each key (tree moves, opening compiles, view switches, table
   moves, sort, search, node -> kernel jumps, back/forward) from the key event until every message
   it caused is handled, the graph it opened is parsed or the kernel it asked for is found, and
   the frame that shows it is painted (background highlighting excluded: plain text shows first).
   Wall and process CPU time per key; p50/p95/max per kind of key.
4. The full garbage collection the keys put off (the app runs it after 1 s without input).

Usage: python bench/tui.py [--mb 200] [--ranks 4] [--rounds 3] [--write]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks_md import write_section  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tests" / "tui" / "model_script.py"
_FRAME = re.compile(rb'"frame_id": (\d+)')
_CID = re.compile(rb'"compile_id": "(\d+)/')


def base_logs(work: Path) -> tuple[Path, Path]:
    """Real logs of the model script: a plain run and a diverging one (cached in `work`)."""
    out = []
    for name, args in (("base0", []), ("base1", ["diverge"])):
        trace = work / name
        logs = sorted(trace.glob("*.log")) if trace.is_dir() else []
        if not logs:
            trace.mkdir(parents=True, exist_ok=True)
            script = work / "model.py"
            script.write_text(SCRIPT.read_text())
            env = {**os.environ, "TORCH_TRACE": str(trace)}
            subprocess.run(
                [sys.executable, str(script), *args], cwd=work, env=env, check=True, capture_output=True
            )
            logs = sorted(trace.glob("*.log"))
        out.append(logs[0])
    return out[0], out[1]


def replicate(base: Path, dest: Path, target_bytes: int) -> int:
    """Write copies of `base` with frame ids shifted per copy until `target_bytes`; returns copies."""
    data = base.read_bytes()
    copies = 0
    with open(dest, "wb") as f:
        while f.tell() < target_bytes:
            shift = copies * 1000
            lines = []
            for line in data.split(b"\n"):
                if not line.startswith(b"\t"):
                    line = _FRAME.sub(lambda m, s=shift: b'"frame_id": %d' % (int(m[1]) + s), line)
                    line = _CID.sub(lambda m, s=shift: b'"compile_id": "%d/' % (int(m[1]) + s), line)
                lines.append(line)
            f.write(b"\n".join(lines).rstrip(b"\n") + b"\n")
            copies += 1
    return copies


def make_trace(work: Path, mb: int, ranks: int) -> Path:
    trace = work / f"trace_{mb}mb_{ranks}ranks"
    if trace.is_dir() and len(list(trace.glob("*.log"))) == ranks:
        return trace
    trace.mkdir(parents=True, exist_ok=True)
    base0, base1 = base_logs(work)
    for r in range(ranks):
        replicate(
            base1 if r == ranks - 1 else base0,
            trace / f"dedicated_log_torch_trace_rank_{r}_bench.log",
            mb * 2**20 // ranks,
        )
    return trace


# -- the child: one measured app run -------------------------------------------------------------
BRACKETS = {"[": "left_square_bracket", "]": "right_square_bracket", "/": "slash"}


def _keys(group: str, keys: str) -> list[tuple[str, str]]:
    return [(group, BRACKETS.get(k, k)) for k in keys.split()]


# From the compile-id tree to a graph node, its kernel and back, in every view: the key kinds the
# latency target is about (tree moves, view switches, search, node -> kernel jumps, back).
KEYS = (
    _keys("tree move", "j j k j j k g G g")
    + _keys("tree open", "j l j enter j enter l h")
    + _keys("view switch", "2 3 4 5 6 7 8 1")
    + _keys("table move", "v j j k G g")
    + _keys("sort", "s s S")
    + _keys("search", "/ r e l u enter")
    + _keys("node -> kernel jump", "o o")  # graph node -> its kernel -> back to the node
    + _keys("back / forward", "[ ] [ [")
    + _keys("guards + diff", "t enter 2 d d")
    # a second round on another compile: open, find the node, jump, come back
    + _keys("tree open", "t j enter")
    + _keys("search", "v / r e l u enter")
    + _keys("node -> kernel jump", "o o")
    + _keys("back / forward", "[ [ ] [")
    + _keys("view switch", "5 1 3 1")
)
# workers whose result is what a key asked for (the highlighting worker only adds colours to
# code already on screen, so it is not waited for)
CONTENT_WORKERS = ("graph-parse", "graph-jump")


async def _keystroke(app, pilot, key: str) -> tuple[float, float]:
    """(wall, CPU) seconds from a key event to the screen repainted after every message it caused.

    CPU time (all threads of the process) is what the key costs on an idle core: on a shared
    box the wall time also counts waiting for a core.

    Pilot.press adds fixed idle-detection sleeps (~40 ms), so the key is sent the way a terminal
    sends it and we wait for the message queues to drain (messages cascade: key -> action ->
    Navigate -> view), for the workers that compute what the key asked for (a graph to parse, a
    kernel to look up: the placeholder painted first does not count as the answer), then for the
    frame that paints it.
    """
    from textual import events
    from textual.keys import _character_to_key

    name = _character_to_key(key) if len(key) == 1 and not key.isalnum() else key
    char = (
        key
        if len(key) == 1
        else {"slash": "/", "left_square_bracket": "[", "right_square_bracket": "]"}.get(key)
    )
    t0, c0 = time.perf_counter(), time.process_time()
    event = events.Key(name, char)
    event.set_sender(app)
    app._driver.send_message(event)
    for _ in range(3):  # key -> binding/action -> Navigate -> view: drain each hop
        await _drain(app)
    if await _content(app):  # a graph parsed or a kernel looked up: its result is the answer
        for _ in range(3):
            await _drain(app)
    await _painted(app)
    return time.perf_counter() - t0, time.process_time() - c0


async def _content(app) -> bool:
    """Wait for the CONTENT_WORKERS a key started; whether there were any."""
    from textual.worker import WorkerState

    waited = False
    while any(
        w.group in CONTENT_WORKERS and w.state in (WorkerState.PENDING, WorkerState.RUNNING)
        for w in app.workers
    ):
        waited = True
        await asyncio.sleep(0.001)
    return waited


async def _drain(app) -> None:
    """Wait until the app, the focused widget's chain and the current view processed their queues."""
    screen = app.screen
    # by id (Textual caches those lookups): a selector query here would cost the key ~5 ms
    nodes = [app, screen, *(screen.query_one(f"#{i}") for i in ("tree", "tabs", "notice", "search", "keys"))]
    if app.focused is not None:
        nodes += list(app.focused.ancestors_with_self)
    nodes += list(app.view().walk_children(with_self=True))
    done = [asyncio.Event() for _ in nodes]
    pending = [e for n, e in zip(nodes, done, strict=True) if n.call_later(e.set)]
    for e in pending:
        await e.wait()


async def _painted(app) -> None:
    """Wait until the screen has painted what the key changed (the frame that shows the result).

    Textual repaints only the widgets marked dirty; the callback runs after that update (at once
    when nothing is dirty). Forcing a full-screen repaint here would time a frame no key causes.
    """
    painted = asyncio.Event()
    app.call_after_refresh(painted.set)
    await painted.wait()


async def _child(path: str, spawned: float) -> dict:
    from fxlens.trace.session import Session
    from fxlens.tui.app import FxlensApp
    from fxlens.tui.widgets import CompileTree

    session = Session.open(path)  # what `fxlens tui` validates before the app starts
    app = FxlensApp(session, export_dir="/tmp", cursor_blink=False)
    out: dict = {}
    async with app.run_test(size=(120, 40)) as pilot:
        tree = app.query_one("#tree", CompileTree)
        # not pilot.pause(): it waits for the process to idle, and the loader thread is still busy
        while not tree.root.children:
            await asyncio.sleep(0.005)
        await _painted(app)
        out["ui_up_s"] = time.time() - spawned  # header, tabs, one "reading N MB" line per rank
        out["ui_up_cpu_s"] = time.process_time()
        while not any(n.data for n in tree.root.children):
            await asyncio.sleep(0.005)
        await _painted(app)
        out["first_paint_s"] = time.time() - spawned
        out["first_paint_cpu_s"] = time.process_time()
        while not app.ready:
            await asyncio.sleep(0.005)
        await _painted(app)
        out["loaded_s"] = time.time() - spawned
        out["loaded_cpu_s"] = time.process_time()
        lat: dict[str, list[tuple[float, float]]] = {}
        for group, key in KEYS:
            await pilot.pause()  # start from an idle app (highlighting workers done)
            lat.setdefault(group, []).append(await _keystroke(app, pilot, key))
        out["latency_ms"] = {g: [round(w * 1000, 2) for w, _ in v] for g, v in lat.items()}
        out["cpu_ms"] = {g: [round(c * 1000, 2) for _, c in v] for g, v in lat.items()}
        out["compiles"] = sum(len(f.compiles) for r in app.data.ranks for f in r.frames)
        # the full garbage collection the keys put off runs once they stop: how long it takes
        app.idle_gc_ms.clear()
        for _ in range(int(app.IDLE_GC_S * 40) + 40):
            if app.idle_gc_ms:
                break
            await asyncio.sleep(0.05)
        out["idle_gc_ms"] = round(max(app.idle_gc_ms, default=0.0), 1)
        # the same keys again, with a pause of more than IDLE_GC_S after every 8 (reading time):
        # the collections then cover a few keys each
        app.idle_gc_ms.clear()
        for i, (_group, key) in enumerate(KEYS):
            await pilot.pause()
            await _keystroke(app, pilot, key)
            if i % 8 == 7:
                await asyncio.sleep(app.IDLE_GC_S + 0.7)
        out["paced_gc_ms"] = [round(x, 1) for x in app.idle_gc_ms]
    out["load"] = os.getloadavg()[0]
    return out


def pct(xs: list[float], q: int) -> float:
    """The q-th percentile (nearest rank)."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, -(-q * len(xs) // 100) - 1))]


def run_child(trace: Path) -> dict:
    spawned = time.time()
    res = subprocess.run(
        [sys.executable, __file__, "--child", str(trace), "--spawned", repr(spawned)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=int, default=200)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work", default="/tmp/fxlens-tui-bench")
    ap.add_argument("--write", action="store_true", help="write the ## TUI section of BENCHMARKS.md")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--spawned", type=float, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(_child(args.child, args.spawned))))
        return 0
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    trace = make_trace(work, args.mb, args.ranks)
    size = sum(p.stat().st_size for p in trace.glob("*.log"))
    load_before = os.getloadavg()[0]
    runs = [run_child(trace) for _ in range(args.rounds)]
    loads = [load_before] + [r["load"] for r in runs]
    load = f"load average {min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} cores"
    first = statistics.median(r["first_paint_s"] for r in runs)
    up = statistics.median(r["ui_up_s"] for r in runs)
    cpu = {k: statistics.median(r[f"{k}_cpu_s"] for r in runs) for k in ("ui_up", "first_paint", "loaded")}
    loaded = statistics.median(r["loaded_s"] for r in runs)
    wall: dict[str, list[float]] = {}
    cpu_ms: dict[str, list[float]] = {}
    for r in runs:
        for g, v in r["latency_ms"].items():
            wall.setdefault(g, []).extend(v)
        for g, v in r["cpu_ms"].items():
            cpu_ms.setdefault(g, []).extend(v)
    every = [x for v in wall.values() for x in v]
    every_cpu = [x for v in cpu_ms.values() for x in v]

    def stats(xs: list[float]) -> str:
        return f"{statistics.median(xs):.1f} / {pct(xs, 95):.1f} / {max(xs):.1f}"

    rows = [f"| {g} | {len(v)} | {stats(v)} | {stats(cpu_ms[g])} |" for g, v in wall.items()]
    rows.append(f"| **all keys** | {len(every)} | {stats(every)} | {stats(every_cpu)} |")
    gc_ms = [r["idle_gc_ms"] for r in runs]
    paced = [x for r in runs for x in r["paced_gc_ms"]] or [0.0]
    text = (
        f"""`python bench/tui.py --mb {args.mb} --ranks {args.ranks} --rounds {args.rounds} --write` (CPU box shared with other work: {load} during the runs; torch 2.13 CPU, Textual headless at 120x40).

Trace: {size / 2**20:.0f} MB in {args.ranks} rank logs, {runs[0]["compiles"]} compile ids (a real log of
`tests/tui/model_script.py` replicated with shifted frame ids; the last rank diverges).

| measure (median of {args.rounds} fresh processes) | wall s | CPU s (process) | target |
|---|---|---|---|
| first screen: process spawn → the app drawn, one "reading N MB" line per rank | {up:.2f} | {cpu["ui_up"]:.2f} | |
| first paint: process spawn → first rank's frames in the tree | {first:.2f} | {cpu["first_paint"]:.2f} | <= 2 |
| everything loaded (all ranks, breaks, recompile causes, divergence) | {loaded:.2f} | {cpu["loaded"]:.2f} | |

Keystroke latency (target: a keystroke answers within 100 ms), from the key event to the painted
frame that shows its result: for a graph that is not parsed yet and for `o` (node → kernel), the
result, not the "reading…" placeholder painted first. Wall time counts waiting for a core on this
shared box; CPU time (all threads of the process, the highlighting worker included) is what the key
costs on an idle core. (Before 2026-12-02 15:00 this bench forced a full-screen repaint after each
key; it now waits for the frame the key dirtied, which is what a terminal gets.) p50 / p95 / max
in ms, {args.rounds} rounds of the same {len(KEYS)} keys:

| keys | n | wall p50 / p95 / max | CPU p50 / p95 / max |
|---|---|---|---|
"""
        + "\n".join(rows)
        + f"""

Full garbage collections run when no key has come for 1 s (then the survivors are frozen), not
inside keystrokes. After the {len(KEYS)} keys above, sent back to back, the one they put off took
{statistics.median(gc_ms):.0f} ms (median of the rounds; max {max(gc_ms):.0f} ms); with a pause after every 8 keys,
{len(paced)} collections took {statistics.median(paced):.0f} ms median, {max(paced):.0f} ms max. A key pressed
while one runs waits for it."""
    )
    print(text)
    if args.write:
        write_section("TUI", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
