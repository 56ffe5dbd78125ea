"""Where the compiled run's extra memory goes, by cause: doctor's `peak_memory.breakdown` and `causes`.

Two measurements, each split into parts that add up to it, the remainder shown:

- the process's peak RSS, compiled minus eager (what the side-by-side table shows). A peak only
  grows, so the probe's marks (fxlens.probe.memory) split it exactly: before the script (imports),
  while compiling (Dynamo, AOTAutograd, inductor in this process; a C++ compiler or compile worker
  runs in processes of its own and is not counted), and while running. Of the compile part, the
  tensors the compiled code still holds are named apart; of the running part, the call's own
  tensor peak difference (below); the rest of each is the remainder.
- per compiled function, the tensor peak of its typical call, compiled minus eager, from torch's
  profiler (fxlens.probe.memprobe), plus the tensors its compiled code holds (allocated while
  compiling, alive all along): the activations saved for backward, compiled minus eager; the held
  tensors, one copy per cache entry; and the remainder (the temporaries of each side: inductor's
  planned buffers are not measured apart).

Every named cause carries fixes as data (fxlens.report.fixes). Pure Python over the probe's events
and the compiled session's trace (graph code); no torch.
"""

from __future__ import annotations

from fxlens.doctor.finding import code_action, loc, simple, site
from fxlens.doctor.finding import finding as _finding
from fxlens.doctor.savedgraph import name_constant, name_saved, rebase_files
from fxlens.report.fixes import action, config_action
from fxlens.report.memorytext import mib
from fxlens.trace.session import Session

# a cause smaller than this is listed in the breakdown but named nowhere else
MIN_BYTES = 1 << 20
# the activation budget tried first: the partitioner then recomputes until half the saved bytes are gone
ACTIVATION_BUDGET = 0.5


def _probes(session: Session | None) -> list[dict]:
    return [e for e in (session.events if session else []) if e.get("event") == "doctor_probe"]


def _aot_graphs(session: Session) -> list[tuple[str, str]]:
    """(forward code, backward code) of every compile that has both, on the first rank."""
    if not session.ranks:
        return []
    out = []
    for cid in list(session.ranks[0].by_compile):
        bw = session.artifact(cid, "aot_backward_graph")
        fw = session.artifact(cid, "aot_forward_graph")
        if bw and fw:
            out.append((fw, bw))
    current = _dynamo_graphs(session)  # a cached AOT graph names the files of the run that cached it
    return [(rebase_files(fw, current), bw) for fw, bw in out]


def _saved_part(mem: dict, graphs: list) -> dict | None:
    """Activations saved for backward, compiled minus eager, the compiled side's largest named."""
    es, cs = mem["eager"].get("saved"), mem["compiled"].get("saved")
    if not es or not cs:
        return None
    named = name_saved(cs.get("order") or [], graphs) or []
    top = sorted((s for s in named if not s.get("own")), key=lambda s: -s["bytes"])
    compiled_top = [
        {k: s.get(k) for k in ("shape", "dtype", "bytes", "op", "node", "file", "line", "code")}
        for s in top[:5]
    ]
    eager_top = [
        {k: s.get(k) for k in ("shape", "dtype", "bytes", "op", "file", "line")} for s in es["top"][:5]
    ]
    return {
        "cause": "saved_activations",
        "bytes": cs["bytes"] - es["bytes"],
        "eager": es["bytes"],
        "compiled": cs["bytes"],
        "eager_count": es["count"],
        "compiled_count": cs["count"],
        "compiled_top": compiled_top,
        "eager_top": eager_top,
        "named": bool(named),
    }


def _dynamo_graphs(session: Session) -> list[str]:
    if not session.ranks:
        return []
    codes = (session.artifact(cid, "dynamo_output_graph") for cid in list(session.ranks[0].by_compile))
    return [c for c in codes if c]


def _held_part(mem: dict, dynamo_graphs: list[str]) -> dict:
    held = mem.get("held") or {"entries": [], "bytes": 0}
    entries = held["entries"]
    tensors = [t for e in entries for t in e["tensors"]]
    for t in tensors:  # held through a list (AOTAutograd's lifted inputs): named from Dynamo's graph
        if not t.get("line") and (named := name_constant(t["shape"], dynamo_graphs)):
            t.update({k: v for k, v in named.items() if not t.get(k)})
    return {
        "cause": "held_by_compiled_code",
        "bytes": held["bytes"],
        "cache_entries": len(entries),
        "entries_holding": sum(1 for e in entries if e["bytes"]),
        "largest": sorted(tensors, key=lambda t: -t["bytes"])[:5],
    }


def function_memory(rec: dict, graphs: list, dynamo_graphs: list[str]) -> dict | None:
    """One compiled function's tensor memory, eager vs compiled, split into causes."""
    mem = (rec.get("bench") or {}).get("memory")
    if not mem or "eager" not in mem:
        return None
    e, c = mem["eager"], mem["compiled"]
    held = _held_part(mem, dynamo_graphs)
    diff = c["peak"] + held["bytes"] - e["peak"]
    parts = [p for p in (_saved_part(mem, graphs), held) if p]
    named = sum(p["bytes"] for p in parts)
    parts.append({"cause": "remainder", "bytes": diff - named, "what": "temporaries of either side"})
    return {
        "function": rec.get("name"),
        "file": rec.get("def_file"),
        "line": rec.get("def_line"),
        "compiled_at": {"file": rec.get("at_file"), "line": rec.get("at_line")},
        "backward": mem.get("backward"),
        "eager": {"peak": e["peak"], "forward_peak": e["forward_peak"]},
        "compiled": {"peak": c["peak"], "forward_peak": c["forward_peak"], "held": held["bytes"]},
        "difference": diff,
        "parts": parts,
        "cost": {
            "seconds": mem.get("seconds"),
            "profiled_s": round(e["profiled_s"] + c["profiled_s"], 4),
            "plain_s": round(e["plain_s"] + c["plain_s"], 4),
        },
        "compiles_during": mem.get("compiles", 0),
    }


def _marks(session: Session | None) -> dict | None:
    for ev in _probes(session):
        marks = (ev.get("memory") or {}).get("rss_marks")
        if marks and ev.get("rank") in (None, 0):
            return marks
    return None


def run_breakdown(eager: dict | None, compiled: dict | None, held: int, call_tensors: int) -> list[dict]:
    """The peak RSS difference in parts that add up to it (see the module's docstring)."""
    if not eager or not compiled:
        return []
    total = compiled["end"]["max"] - eager["end"]["max"]
    before = compiled["start"]["max"] - eager["start"]["max"]
    compiling = sum(c["peak_growth"] for c in compiled["compiles"])
    running = total - before - compiling
    held_part = max(0, min(held, compiling))
    tensors = max(0, min(call_tensors, running)) if running > 0 else 0
    n = len(compiled["compiles"])
    parts = [
        {"cause": "before_script", "bytes": before, "what": "the processes' peaks before the script ran"},
        {
            "cause": "compiler",
            "bytes": compiling - held_part,
            "compiles": n,
            "what": f"peak growth while compiling ({n} compile(s)), apart from the tensors still held",
        },
        {"cause": "held_by_compiled_code", "bytes": held_part, "what": "tensors the compiled code holds"},
        {
            "cause": "call_tensors",
            "bytes": tensors,
            "what": "the largest call's tensor peak difference (saved activations, temporaries)",
        },
    ]
    parts.append(
        {
            "cause": "remainder",
            "bytes": total - sum(p["bytes"] for p in parts),
            "what": "the rest of the running phase's growth (allocator, Python objects); below 0 when "
            "the compile's high-water mark absorbed growth that eager shows while running",
        }
    )
    return parts


def _saved_cause(f: dict, part: dict) -> dict | None:
    if part["bytes"] < MIN_BYTES:
        return None
    top = (part["compiled_top"] or [{}])[0]
    where = f" ({top.get('op')} at {loc(top.get('file'), top.get('line'))})" if top.get("op") else ""
    largest = f"; largest saved tensor {top['shape']}{where}" if top.get("shape") else ""
    return {
        "cause": "saved_activations",
        "bytes": part["bytes"],
        "function": f["function"],
        "file": top.get("file") or f["file"],
        "line": top.get("line") or f["line"],
        "message": f"`{f['function']}` saves {mib(part['compiled'])} for backward compiled vs "
        f"{mib(part['eager'])} eager{largest}",
        "fix": f"lower the activation memory budget (`torch._functorch.config.activation_memory_budget = "
        f"{ACTIVATION_BUDGET}`): the partitioner recomputes instead of saving",
        "actions": [
            config_action("functorch.activation_memory_budget", ACTIVATION_BUDGET, "peak_memory")
        ],
    }


def _held_cause(f: dict, part: dict, rec: dict) -> dict | None:
    if part["bytes"] < MIN_BYTES:
        return None
    big = (part["largest"] or [{}])[0]
    # where: the largest held tensor whose line is known (a prepacked weight has none; the constant
    # it was folded from has)
    lined = next((t for t in part["largest"] if t.get("line")), big)
    frozen = any(str(t.get("name", "")).startswith("_frozen_param") for t in part["largest"])
    entries = part["entries_holding"]
    at = {"file": rec.get("at_file"), "line": rec.get("at_line")}
    name = simple(f["function"])
    actions, fixes = [], []
    if entries > 1:
        actions += [
            action("dynamic", function=name, file=f["file"], **site(at)),
            config_action("recompile_limit", 2, "recompiles"),
        ]
        fixes.append(
            f"one copy per cache entry ({entries} entries): compile it dynamic "
            f"(`torch.compile(..., dynamic=True)` at {loc(at['file'], at['line'])}) so one graph serves "
            "every shape"
        )
    if frozen:
        actions.append(config_action("inductor.freezing", False, "peak_memory"))
        fixes.append(
            "turn inductor's freezing off (`torch._inductor.config.freezing = False`): its folded "
            "and prepacked copies of the weights are kept beside the originals"
        )
    if not frozen:
        text = (
            f"keep the tensor made at {loc(lined.get('file'), lined.get('line'))} out of the compiled code's "
            "constants (pass it as an argument, or register it as a buffer)"
        )
        actions.append(code_action(text, lined.get("file"), lined.get("line")))
        fixes.append(text)
    what = f"`{big.get('name')}` {big.get('shape')} {mib(big.get('bytes'))}"
    return {
        "cause": "held_by_compiled_code",
        "bytes": part["bytes"],
        "function": f["function"],
        "file": lined.get("file") or at["file"],
        "line": lined.get("line") or at["line"],
        "message": f"`{f['function']}`'s compiled code holds {mib(part['bytes'])} of tensors the model does "
        f"not ({entries} cache entr{'y' if entries == 1 else 'ies'} holding; largest {what})",
        "fix": "; ".join(fixes),
        "actions": actions,
    }


def _compiler_cause(part: dict, n_compiles: int) -> dict | None:
    if part["bytes"] < MIN_BYTES:
        return None
    return {
        "cause": "compiler",
        "bytes": part["bytes"],
        "function": None,
        "file": None,
        "line": None,
        "message": f"compiling raised the process's peak RSS by {mib(part['bytes'])} ({n_compiles} compile(s))",
        "fix": "fewer compiles (dynamic shapes, regional compilation) lower it; the compiler's own memory "
        "is otherwise the price of compiling",
        "actions": [],
    }


def memory_breakdown(eager_session: Session | None, compiled_session: Session) -> dict:
    """`peak_memory`'s additions: per function, the run's breakdown, the named causes, the cost."""
    graphs, dynamo_graphs = _aot_graphs(compiled_session), _dynamo_graphs(compiled_session)
    recs = [r for ev in _probes(compiled_session)[:1] for r in ev.get("records") or []]
    functions, causes = [], []
    for rec in recs:
        f = function_memory(rec, graphs, dynamo_graphs)
        if f is None:
            continue
        functions.append(f)
        by = {p["cause"]: p for p in f["parts"]}
        for c in (
            _saved_cause(f, by["saved_activations"]) if "saved_activations" in by else None,
            _held_cause(f, by["held_by_compiled_code"], rec),
        ):
            if c:
                causes.append(c)
    held = sum(f["compiled"]["held"] for f in functions)
    call = max((f["difference"] - f["compiled"]["held"] for f in functions), default=0)
    c_marks = _marks(compiled_session)
    breakdown = run_breakdown(_marks(eager_session), c_marks, held, call)
    if breakdown and (c := _compiler_cause(breakdown[1], breakdown[1]["compiles"])):
        causes.append(c)
    causes.sort(key=lambda c: -c["bytes"])
    tensor = {
        "eager": max((f["eager"]["peak"] for f in functions), default=None),
        "compiled": max((f["compiled"]["peak"] + f["compiled"]["held"] for f in functions), default=None),
        "kind": "profiler_memory_events",
        "over": "doctor's replay of each function's typical call, after the script",
    }
    cost = {
        "seconds": round(sum(f["cost"]["seconds"] or 0 for f in functions), 3),
        "profiled_s": round(sum(f["cost"]["profiled_s"] for f in functions), 4),
        "plain_s": round(sum(f["cost"]["plain_s"] for f in functions), 4),
    }
    return {"tensor": tensor, "functions": functions, "breakdown": breakdown, "causes": causes, "cost": cost}


def memory_findings(memory: dict) -> list[dict]:
    """One doctor finding per named cause that has a fix to try."""
    out = []
    for c in memory.get("causes") or []:
        if c["actions"]:
            out.append(
                _finding(
                    f"memory_{c['cause']}",
                    c["message"],
                    c["file"],
                    c["line"],
                    c["fix"],
                    0.0,
                    c["function"],
                    c["actions"],
                )
            )
            out[-1]["bytes"] = c["bytes"]
    return out
