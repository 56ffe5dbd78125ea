"""Where cold start goes: compile seconds per frame, per stage and per rank, the share recompiles
cost, what torch's caches did for each compile, and whether ranks' cache patterns diverge.

Reads the report's per-compile rows (fxlens.report.compiles, whose times and cache events the
model took from every field torch writes: fxlens.trace.compile_cost); nothing here reads a log.
"""

from __future__ import annotations

from collections import defaultdict

from fxlens.report.document import Line, Section
from fxlens.report.ranks import rank_ranges

TOP = 3  # frames and stages named in the headline

# the exclusive stages of a compile, from torch's nested times (each includes the next)
STAGES = ("dynamo", "outside inductor", "whole compile", "aot_autograd", "inductor", "code_gen", "backward")


def cache_outcomes(row: dict) -> dict[str, str]:
    """{cache: "hit" | "miss" | "bypass" | "hit 1, miss 2"} for a per-compile row: from torch's cache
    artifacts where it logged them, else from its hit/miss counters in the compile's metrics."""
    out: dict[str, list[str]] = {}
    for c in row.get("caches") or []:
        out.setdefault(c["cache"], []).append(c["outcome"])
    for name, c in (row.get("cache") or {}).items():  # counters: inductor_fx_local, aotautograd_local
        short = "fx_graph" if name.startswith("inductor_fx") else "aotautograd"
        if short not in out:
            out[short] = ["hit"] * int(c.get("hits") or 0) + ["miss"] * int(c.get("misses") or 0)
    order = ("fx_graph", "aotautograd")  # inductor's cache first, whatever order torch logged them in
    return {
        k: _fold(out[k])
        for k in sorted(out, key=lambda k: (k not in order, order.index(k) if k in order else 0, k))
        if out[k]
    }


def _fold(outcomes: list[str]) -> str:
    if len(set(outcomes)) == 1:
        return outcomes[0] if len(outcomes) == 1 else f"{outcomes[0]} x{len(outcomes)}"
    counts = {o: outcomes.count(o) for o in dict.fromkeys(outcomes)}
    return ", ".join(f"{o} {n}" for o, n in counts.items())


def is_recompile(compile_id: str) -> bool:
    """ "0/1" and later compiles of a frame are recompiles ("0/0" is its first compile)."""
    parts = str(compile_id).split("/")
    return len(parts) == 2 and parts[1].split("_")[0].isdigit() and int(parts[1].split("_")[0]) > 0


def stage_split(row: dict) -> dict[str, float]:
    """A compile's time split into exclusive stages: Dynamo (tracing, guards: the frame less the
    backend), AOTAutograd (the backend less inductor), inductor (less code generation), code
    generation, and the backward graph's compile. Stages torch did not time are left out; a compile
    with only its total is all "dynamo" when no backend time exists to split it."""
    total, backend = row.get("forward_s"), row.get("backend_s")
    inductor, code_gen = row.get("inductor_s"), row.get("code_gen_s")
    # without the backend's time the frame's remainder is not Dynamo's alone (AOTInductor has none)
    first = (
        "dynamo" if backend is not None else "outside inductor" if inductor is not None else "whole compile"
    )
    nested = [(first, total), ("aot_autograd", backend), ("inductor", inductor), ("code_gen", code_gen)]
    known = [(k, v) for k, v in nested if v is not None]
    out: dict[str, float] = {}
    for (k, v), nxt in zip(known, [*known[1:], None]):
        out[k] = max(0.0, v - (nxt[1] if nxt else 0.0))
    if row.get("backward_s"):
        out["backward"] = row["backward_s"]
    return {k: round(v, 6) for k, v in out.items()}


def _share(part: float, whole: float) -> float:
    return round(part / whole, 4) if whole else 0.0


def cold_start(per_compile: list[dict]) -> dict:
    """`{total_s, rank, compiles, top_frames, stages, recompiles, recompile_s, recompile_share, caches,
    message}` for the slowest rank (the one a job waits for; the only one for a single process)."""
    by_rank: dict = defaultdict(list)
    for row in per_compile:
        by_rank[row["rank"]].append(row)
    if not by_rank:
        return {}
    rank, rows = max(by_rank.items(), key=lambda kv: sum(r["total_s"] or 0.0 for r in kv[1]))
    total = sum(r["total_s"] or 0.0 for r in rows)
    frames: dict[tuple, dict] = {}
    stages: dict[str, float] = defaultdict(float)
    recompile_s, recompiles = 0.0, 0
    caches: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    saved = 0.0
    for r in rows:
        f = frames.setdefault(
            (r["function"], r.get("file") or "", r.get("line") or 0),
            {"function": r["function"], "file": r.get("file") or "", "line": r.get("line") or 0}
            | {"compiles": 0, "recompiles": 0, "total_s": 0.0, "recompile_s": 0.0},
        )
        t = r["total_s"] or 0.0
        f["compiles"] += 1
        f["total_s"] += t
        if is_recompile(r["compile_id"]):
            f["recompiles"] += 1
            f["recompile_s"] += t
            recompile_s += t
            recompiles += 1
        for k, v in stage_split(r).items():
            stages[k] += v
        for c in r.get("caches") or []:
            caches[c["cache"]][c["outcome"]] += 1
            saved += c.get("saved_s") or 0.0
    top = sorted(frames.values(), key=lambda f: -f["total_s"])
    for f in top:
        f["total_s"], f["recompile_s"] = round(f["total_s"], 6), round(f["recompile_s"], 6)
        f["share"] = _share(f["total_s"], total)
    stage_rows = [
        {"stage": k, "seconds": round(v, 6), "share": _share(v, total)}
        for k, v in sorted(stages.items(), key=lambda kv: -kv[1])
    ]
    out = {
        "rank": rank,
        "total_s": round(total, 6),
        "compiles": len(rows),
        "top_frames": top[:10],
        "stages": stage_rows,
        "recompiles": recompiles,
        "recompile_s": round(recompile_s, 6),
        "recompile_share": _share(recompile_s, total),
        "caches": {k: dict(v) for k, v in caches.items()},
        "cache_saved_s": round(saved, 6),
    }
    out["message"] = _message(out, len(by_rank) > 1)
    return out


def _message(c: dict, ranked: bool) -> str:
    whose = f" on rank {c['rank']} (the slowest)" if ranked else ""
    parts = [f"{c['total_s']:.2f} s compiling over {c['compiles']} compile(s){whose}"]
    frames = [f for f in c["top_frames"][:TOP] if f["total_s"] > 0]
    if frames:
        parts.append(
            "frames: "
            + ", ".join(f"{_name(f)} {f['total_s']:.2f} s ({100 * f['share']:.0f}%)" for f in frames)
        )
    stages = [s for s in c["stages"][:TOP] if s["seconds"] > 0]
    if stages:
        parts.append(
            "stages: "
            + ", ".join(f"{s['stage']} {s['seconds']:.2f} s ({100 * s['share']:.0f}%)" for s in stages)
        )
    parts.append(
        f"recompiles: {c['recompiles']}, {c['recompile_s']:.2f} s ({100 * c['recompile_share']:.0f}%)"
    )
    return "; ".join(parts)


def _name(frame: dict) -> str:
    """A frame's function; AOTInductor's compile names no frame (torch logs no compile id for it)."""
    return frame["function"] if frame["function"] not in ("?", "") else "(unnamed: AOTInductor or no frame)"


def per_stage(per_compile: list[dict]) -> dict[str, float]:
    """Seconds per exclusive stage, over every compile of every rank."""
    out: dict[str, float] = defaultdict(float)
    for r in per_compile:
        for k, v in stage_split(r).items():
            out[k] += v
    return {k: round(out[k], 6) for k in STAGES if k in out}


def per_rank(per_compile: list[dict]) -> list[dict]:
    """`[{rank, compiles, total_s, recompile_s}]`, slowest first."""
    out: dict = {}
    for r in per_compile:
        e = out.setdefault(r["rank"], {"rank": r["rank"], "compiles": 0, "total_s": 0.0, "recompile_s": 0.0})
        e["compiles"] += 1
        e["total_s"] += r["total_s"] or 0.0
        if is_recompile(r["compile_id"]):
            e["recompile_s"] += r["total_s"] or 0.0
    rows = sorted(out.values(), key=lambda e: -e["total_s"])
    for e in rows:
        e["total_s"], e["recompile_s"] = round(e["total_s"], 6), round(e["recompile_s"], 6)
    return rows


def cache_divergence(per_compile: list[dict]) -> dict:
    """Ranks grouped by their sequence of cache outcomes, in the order each logged them (tlparse's
    "Diverging Cache hit/miss patterns" check, with the first compile where a group differs from
    the largest). `{diverges, groups: [{ranks, sequence, first_difference}]}`; one group: no
    divergence."""
    seqs: dict = defaultdict(list)
    for r in per_compile:
        for c in r.get("caches") or []:
            seqs[r["rank"]].append((r["compile_id"], c["cache"], c["outcome"]))
    ranks = list(dict.fromkeys(r["rank"] for r in per_compile))
    if len(ranks) < 2:
        return {"diverges": False, "groups": []}
    by_seq: dict[tuple, list] = defaultdict(list)
    for rank in ranks:
        by_seq[tuple(seqs.get(rank, []))].append(rank)
    ordered = sorted(by_seq.items(), key=lambda kv: (-len(kv[1]), str(kv[1][0])))
    normal = ordered[0][0]
    groups = []
    for seq, members in ordered:
        groups.append(
            {
                "ranks": members,
                "sequence": [f"{cid} {cache} {outcome}" for cid, cache, outcome in seq],
                "first_difference": None if seq == normal else _first_difference(seq, normal),
            }
        )
    return {"diverges": len(groups) > 1, "groups": groups}


def _first_difference(seq: tuple, normal: tuple) -> str:
    for i, (mine, theirs) in enumerate(zip(seq, normal)):
        if mine != theirs:
            return f"lookup {i + 1}: {' '.join(mine)} where the largest group has {' '.join(theirs)}"
    if len(seq) > len(normal):
        return f"lookup {len(normal) + 1}: {' '.join(seq[len(normal)])}, which the largest group never made"
    if len(seq) < len(normal):
        return f"no lookup {len(seq) + 1}: the largest group has {' '.join(normal[len(seq)])}"
    return ""


def bypass_reasons(per_compile: list[dict]) -> list[dict]:
    """Each distinct cache bypass reason torch gave, with the compiles it hit: `[{cache, reason,
    compile_ids, ranks}]`."""
    out: dict[tuple, dict] = {}
    for r in per_compile:
        for c in r.get("caches") or []:
            if c["outcome"] == "bypass":
                e = out.setdefault(
                    (c["cache"], c["reason"]),
                    {"cache": c["cache"], "reason": c["reason"], "compile_ids": [], "ranks": []},
                )
                if r["compile_id"] not in e["compile_ids"]:
                    e["compile_ids"].append(r["compile_id"])
                if r["rank"] not in e["ranks"]:
                    e["ranks"].append(r["rank"])
    return list(out.values())


def cold_start_section(ct: dict) -> list[Section]:
    """Where cold start goes (the compile-time figures CT's headline), one line under its name: the
    compile-time section's lead (fxlens.report.overview) and a row of the TUI's Metrics view."""
    cs = ct.get("cold_start") or {}
    return [Section("Where cold start goes", [Line(cs["message"], 0)])] if cs.get("total_s") else []


def cache_section(ct: dict) -> list[Section]:
    """What the caches did (counts per cache, time hits saved, bypass reasons whole) and the ranks
    whose cache patterns diverge: one untitled section (none when there is nothing to say)."""
    cs = ct.get("cold_start") or {}
    caches = cs.get("caches") or {}
    out = []
    if caches:
        counts = "; ".join(
            f"{name}: " + ", ".join(f"{n} {o}" for o, n in sorted(v.items()))
            for name, v in sorted(caches.items())
        )
        saved = cs.get("cache_saved_s") or 0
        whose = f" on rank {cs['rank']}" if len(ct.get("per_rank") or []) > 1 else ""
        out.append(Line(f"Caches{whose}: {counts}" + (f" (hits saved {saved:.2f} s)" if saved else ""), 0))
    for b in ct.get("cache_bypasses") or []:
        reason = " ".join((b["reason"] or "no reason given").split())
        out.append(Line(f"{b['cache']} bypassed for {', '.join(b['compile_ids'])}: {reason}"))
    div = ct.get("cache_divergence") or {}
    if div.get("diverges"):
        out.append(
            Line(
                "Cache hit/miss patterns diverge across ranks (ranks that compile differently can hang):",
                0,
                alarm=True,
            )
        )
        for g in div["groups"][:8]:
            seq = ", ".join(g["sequence"][:4]) + (" ..." if len(g["sequence"]) > 4 else "")
            why = f" -- differs at {g['first_difference']}" if g["first_difference"] else " (largest group)"
            out.append(Line(f"rank(s) {rank_ranges(g['ranks'], limit=6)}: {seq or 'no cache lookups'}{why}"))
    return [Section("", out)] if out else []
