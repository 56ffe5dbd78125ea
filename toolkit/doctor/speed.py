"""doctor's findings on speed: slower than eager, compile not paid back, inconclusive, implausibly
slow eager, never called, and "no graph captured".

Each one that rests on a speedup appears only when the speedup's interval allows it (the row's
verdict, fxlens.report.speedups); otherwise the finding is `timing_inconclusive`, saying why and
what to run instead.
"""

from __future__ import annotations

from fxlens.doctor.finding import code_action, site
from fxlens.doctor.finding import finding as _finding
from fxlens.doctor.finding import loc as _loc
from fxlens.report.doctor_text import inconclusive_why, load_phrase, rerun_advice
from fxlens.report.fixes import action
from fxlens.report.headlines import bypass_fix
from fxlens.report.speedups import fmt_speedup, is_busy, verdict

# eager slower than this many times the time its work takes on a core of its own is implausible
IMPLAUSIBLE_FACTOR = 4.0
# a process that got less than this share of the wall time while eager ran was waiting for a core
WAITING_SHARE = 0.5
# at or above this share the process had a core while eager ran: a slow eager is its own Python
BUSY_CPU_SHARE = 0.8


def _never_called(row: dict) -> dict:
    fn, at = row["function"], row["compiled_at"]
    # `compiled.generate(...)`: the script did use the object torch.compile returned, through a
    # method of the original module that never reaches the compiled forward
    bypass = bypass_fix(at["file"], at["line"])
    return _finding(
        "never_called",
        f"`{fn}` is compiled at {_loc(at['file'], at['line'])} but never called in this run",
        at["file"],
        at["line"],
        bypass
        or "call the object torch.compile returned (not the original), or remove the torch.compile call",
        0.0,
        fn,
        # `model.compile()` in place reaches the calls that bypass the wrapper (tried by `fxlens fix`)
        [action("compile_in_place", **site(at))]
        if bypass
        else [code_action("call the object torch.compile returned")],
    )


def _measured(row: dict) -> str:
    """`speedup 0.31x [0.28, 0.35] from 40 pairs`: the figure a timing finding rests on."""
    s = row.get("samples") or {}
    n = min(s.values()) if s else 0
    what = "interleaved pairs" if (row.get("timing") or {}).get("method") == "interleaved" else "calls a side"
    return f"speedup {fmt_speedup(row['speedup'], row.get('speedup_interval'))} from {n} {what}"


def _slower_than_eager(row: dict, cuda: bool, breaks: int) -> dict:
    fn, at = row["function"], row["compiled_at"]
    where = _loc(at["file"], at["line"])
    e, c, cs, n = row["eager_ms"], row["compiled_ms"], row["compile_s"] or 0.0, row["calls"]
    extra = f'; CUDA graphs (`mode="reduce-overhead"` at {where}) cut per-call overhead' if cuda else ""
    first = f"remove the {breaks} graph break(s) in `{fn}` (below) or " if breaks else ""
    return _finding(
        "slower_than_eager",
        f"`{fn}` is slower compiled than eager: {c:.4g} ms vs {e:.4g} ms per call "
        f"({c / e:.2f}x slower; {_measured(row)}) over {n} calls, plus {cs:.2f} s compiling",
        at["file"],
        at["line"],
        f"{first}compile a larger region (the whole step) so the fixed per-call cost is "
        f"amortised; if neither helps, do not compile `{fn}`: "
        f"drop torch.compile at {where}{extra}",
        (c - e) * n + cs * 1000,
        fn,
        [action("no_compile", **site(at))],
    )


def _compile_not_amortised(row: dict) -> dict:
    fn, at = row["function"], row["compiled_at"]
    where = _loc(at["file"], at["line"])
    e, c, cs, n = row["eager_ms"], row["compiled_ms"], row["compile_s"] or 0.0, row["calls"]
    backend = str(row["options"].get("backend") or "")
    cache = (
        "; inductor's on-disk FX graph cache (on by default) makes the next run compile faster, "
        "and torch.compiler.save_cache_artifacts()/load_cache_artifacts() carry it to other machines"
        if backend == "inductor"
        else ""
    )
    return _finding(
        "compile_not_amortised",
        f"`{fn}` is {e / c:.2f}x faster compiled ({_measured(row)}), but its {cs:.2f} s of compiling pays off only "
        f"after {row['break_even_calls']} calls and this run makes {n}",
        at["file"],
        at["line"],
        f"for runs this short, skip torch.compile at {where} (e.g. behind a flag); it pays "
        f"off in runs of more than {row['break_even_calls']} calls{cache}",
        cs * 1000 - (e - c) * n,
        fn,
        [action("no_compile", **site(at))],
    )


def _inconclusive(row: dict, load: dict) -> dict:
    fn, at = row["function"], row["compiled_at"]
    why = inconclusive_why(load, row.get("samples"), row.get("speedup_interval"), row.get("timing"))
    return _finding(
        "timing_inconclusive",
        f"`{fn}`: inconclusive: {why} ({_measured(row)}); no verdict on its speed",
        at["file"],
        at["line"],
        rerun_advice(load, row.get("timing"), min((row.get("samples") or {"n": 0}).values())),
        0.0,
        fn,
    )


def _implausible_eager(row: dict, load: dict) -> dict | None:
    """Eager slower than its work explains: the process waited for a core (a busy machine)."""
    t = row.get("timing") or {}
    work, share = t.get("work") or {}, (t.get("cpu_share") or {}).get("eager")
    bound, e = work.get("quiet_bound_ms"), row["eager_ms"]
    slow = bound is not None and e is not None and e > IMPLAUSIBLE_FACTOR * bound
    waiting = share is not None and share < WAITING_SHARE
    if not (slow or waiting):
        return None
    fn, at = row["function"], row["compiled_at"]
    what = (
        f"{work.get('torch_calls', '?')} torch calls, {work.get('flops', 0) / 1e6:.3g} MFLOP, "
        f"{work.get('bytes_out', 0) / 2**20:.3g} MiB written"
    )
    msg = f"eager `{fn}` takes {e:.4g} ms per call"
    if slow:
        msg += f" for work ({what}) that takes under {bound:.3g} ms on a core of its own"
    fastest = (t.get("fastest_ms") or {}).get("eager")
    if slow and fastest is not None and fastest <= IMPLAUSIBLE_FACTOR * bound:
        # some calls ran within the bound: the slow median is stalls, not the function's own work (the
        # CPU share cannot tell: intra-op threads spin-wait on CPU while the busy machine stalls them)
        msg += f"; its fastest calls took {fastest:.3g} ms, so the rest is stalls"
    elif slow and share is not None and share >= BUSY_CPU_SHARE:
        # every call was slow and the process had a core: the time is its own, spent in Python
        # between the torch calls (a model's hooks, decorators, input checks): what compiling removes
        return _finding(
            "eager_python_overhead",
            msg + f"; every call was that slow and the process had the CPU (process CPU / wall "
            f"{share:.2f}), so the rest is Python between the torch calls (the model's own code, hooks, "
            "decorators), not the machine",
            at["file"],
            at["line"],
            "nothing to fix in the measurement: that overhead is what torch.compile removes, and the "
            "speedup includes it; in eager, fewer Python layers per call (hooks, wrappers) cut it",
            0.0,
            fn,
        )
    if waiting:
        msg += f"; the process ran only {share:.0%} of that time"
    busy = is_busy(load)
    msg += f": {'the machine was busy' if busy else 'it waited (a sleep, I/O, a lock, or a busy machine)'}, {load_phrase(load)}"
    return _finding(
        "eager_implausibly_slow",
        msg + "; every time here is inflated",
        at["file"],
        at["line"],
        rerun_advice(load) if busy else "look for what the function waits on; " + rerun_advice(load),
        0.0,
        fn,
    )


def timing_findings(
    rows: list[dict],
    cuda: bool,
    breaks_in: dict[int, int],
    failed: str | None = None,
    load: dict | None = None,
    ran_eagerly: bool = False,
) -> list[dict]:
    """Findings on speed, each only when the speedup's interval allows it (verdict not inconclusive)."""
    out = []
    load = load or {}
    for row in rows:
        if not row["calls"] and not failed:
            if not row.get("compile_raised"):  # a call whose compile raised was a call
                out.append(_never_called(row))
            continue
        e, c, n = row["eager_ms"], row["compiled_ms"], row["calls"]
        if e is None or c is None:
            continue
        if (odd := _implausible_eager(row, load)) is not None:
            out.append(odd)
        if ran_eagerly:  # no graph: the verdict is on Dynamo's overhead, said by no_graph_captured
            continue
        said = row.get("verdict") or verdict(row.get("speedup_interval"))
        if said == "slower":
            out.append(_slower_than_eager(row, cuda, breaks_in.get(id(row), 0)))
        elif said == "faster" and row["break_even_calls"] is not None and row["break_even_calls"] > n:
            out.append(_compile_not_amortised(row))
        elif said == "inconclusive" and not (row.get("timing") or {}).get("capture_only"):
            # a capture-only backend has no speed verdict to be inconclusive about (said up front)
            out.append(_inconclusive(row, load))
    return out


def no_graph(rows: list[dict]) -> dict:
    """torch.compile was called, its objects were called, and Dynamo captured not one graph."""
    called = [r for r in rows if r["calls"]]
    row = next((r for r in called if r.get("wrapped_in")), called[0])
    at = row["compiled_at"]
    where = _loc(at["file"], at["line"])
    timed = f" ({_measured(row)})" if row.get("speedup") is not None else ""
    if row.get("wrapped_in"):
        cause = (
            f"Dynamo skipped the {row['wrapped_in']} wrapper's forward compiled at {where}, so the model "
            "inside never reached the compiler"
        )
        fix = (
            f"compile the module, then wrap it: `model.compile()` (or `model = torch.compile(model)`) "
            f"before `{row['wrapped_in']}(model, ...)`, and drop torch.compile at {where}"
        )
    else:
        cause = f"every frame of `{row['function']}` was skipped or broke before any op"
        fix = "see the graph breaks below for why each frame fell back; `fullgraph=True` turns the first into an error"
    return _finding(
        "no_graph_captured",
        f"torch.compile captured no graph: everything ran eagerly{timed}; {cause}",
        at["file"],
        at["line"],
        fix,
        0.0,
        row["function"],
        # the wrapper compiled first: DDP(torch.compile(model)) (tried); else the breaks carry the fixes
        [action("compile_inside_ddp", **site(at))] if row.get("wrapped_in") else [],
    )
