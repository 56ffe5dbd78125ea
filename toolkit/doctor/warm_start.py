"""`fxlens doctor --warm`: cold vs warm start, measured.

Two more compiled runs of the script, both with torch's on-disk caches pointed at one private,
empty temporary folder (TORCHINDUCTOR_CACHE_DIR, which holds inductor's FX graph cache and
AOTAutograd's cache, and TRITON_CACHE_DIR): the first run starts cold and fills it, the second starts
warm from it. So the user's own cache is neither read (the cold run is really cold) nor written.
Each run's trace gives torch's compile seconds and every cache lookup (fxlens.trace.compile_cost); the
result says what the caches saved and suggests torch's portable cache
(`torch.compiler.save_cache_artifacts` / `load_cache_artifacts`) with the warm time measured here.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from fxlens.capture.command import run_captured
from fxlens.doctor.warmparts import warm_parts
from fxlens.report.build import build_report
from fxlens.trace.session import Session

# torch's own cache switches (not fxlens's: config.py declares those), set for both runs alike
CACHE_ENV = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")
# on, whatever the user's environment turned off: the point is to measure them
CACHES_ON = {
    "TORCHINDUCTOR_FX_GRAPH_CACHE": "1",
    "TORCHINDUCTOR_AUTOGRAD_CACHE": "1",
    "TORCHINDUCTOR_FORCE_DISABLE_CACHES": "0",
}


# runs the script after loading torch's portable cache, or saves it after (fxlens.doctor.warmrun)
_WRAPPER = str(Path(__file__).with_name("warmrun.py"))


def _one_run(script: str, args, run_dir: Path, cache: Path, backend, timeout, bundle=None) -> dict:
    env = {"TORCHINDUCTOR_CACHE_DIR": str(cache / "inductor"), "TRITON_CACHE_DIR": str(cache / "triton")}
    if bundle:  # (mode, path): the script runs inside the wrapper
        script, args = _WRAPPER, [bundle[0], str(bundle[1]), script, *args]
    result = run_captured(
        script,
        list(args),
        backend=backend,
        session_dir=str(run_dir),
        env={**env, **CACHES_ON},
        timeout=timeout,
        stdout=str(run_dir / "output.log"),
        stderr=str(run_dir / "output.log"),
    )
    session = Session.open(run_dir)
    ct = build_report(session, with_guards=False)["compile_times"]
    caches: dict[str, dict[str, int]] = {}
    lookups = []
    for row in ct["per_compile"]:
        for c in row.get("caches") or []:
            caches.setdefault(c["cache"], {}).setdefault(c["outcome"], 0)
            caches[c["cache"]][c["outcome"]] += 1
            lookups.append(
                {"compile_id": row["compile_id"], "rank": row["rank"], "function": row["function"], **c}
            )
    seconds = session.info.get("seconds")
    return {
        "session": str(run_dir),
        "exit_code": result.exit_code,
        "compile_s": ct["total_s"],
        "compiles": len(ct["per_compile"]),
        "process_s": round(float(seconds), 3) if isinstance(seconds, (int, float)) else None,
        "caches": caches,
        "lookups": lookups,
        "parts": warm_parts(run_dir / "trace"),
    }


def cold_vs_warm(script: str, args, sdir: Path, *, backend=None, timeout=None) -> dict:
    """Run SCRIPT compiled twice with one private, initially empty cache folder; `{cold, warm,
    saved_s, warm_ratio, hits, private_cache, message, suggestion}`. The folder is deleted after."""
    cache = Path(tempfile.mkdtemp(prefix="fxlens-warm-cache-"))
    fresh = Path(tempfile.mkdtemp(prefix="fxlens-warm-bundle-"))
    artifacts = fresh / "bundle.bin"
    try:
        cold = _one_run(script, args, sdir / "warm-cold", cache, backend, timeout, ("save", artifacts))
        warm = _one_run(script, args, sdir / "warm-warm", cache, backend, timeout)
        bundle = None
        if artifacts.is_file():  # a third process on an empty cache folder, the bundle loaded first
            load = ("load", artifacts)
            bundle = _one_run(script, args, sdir / "warm-bundle", fresh / "c", backend, timeout, load)
            bundle["bundle_bytes"] = artifacts.stat().st_size
            load = artifacts.with_name("bundle.bin.load_s")
            bundle["load_s"] = float(load.read_text()) if load.is_file() else None
    finally:
        shutil.rmtree(cache, ignore_errors=True)
        shutil.rmtree(fresh, ignore_errors=True)
    saved = round(cold["compile_s"] - warm["compile_s"], 3)
    ratio = round(warm["compile_s"] / cold["compile_s"], 3) if cold["compile_s"] else None
    hits = [x for x in warm["lookups"] if x["outcome"] == "hit"]
    out = {
        "private_cache": True,
        "cache_env": list(CACHE_ENV),
        "cold": cold,
        "warm": warm,
        "saved_s": saved,
        "warm_ratio": ratio,
        "hits": hits,
        "bundle": bundle,
    }
    out["message"] = _message(out)
    out["suggestion"] = _suggestion(out)
    return out


def _caches(run: dict) -> str:
    return (
        "; ".join(
            f"{name}: " + ", ".join(f"{n} {o}" for o, n in sorted(v.items()))
            for name, v in sorted(run["caches"].items())
        )
        or "no cache lookups logged"
    )


def _message(w: dict) -> str:
    cold, warm = w["cold"], w["warm"]
    if cold["exit_code"] or warm["exit_code"]:
        return (
            f"a run failed (exit {cold['exit_code']} cold, {warm['exit_code']} warm): see {cold['session']}"
        )
    share = f" ({100 * w['saved_s'] / cold['compile_s']:.0f}% of it)" if cold["compile_s"] else ""
    return (
        f"cold {cold['compile_s']:.2f} s compiling ({_caches(cold)}), warm {warm['compile_s']:.2f} s "
        f"({_caches(warm)}): the caches save {w['saved_s']:.2f} s{share}"
    )


def _suggestion(w: dict) -> str:
    if not w["hits"]:
        bypass = [x for x in w["warm"]["lookups"] if x["outcome"] == "bypass"]
        why = f": {bypass[0]['cache']} bypassed ({' '.join(bypass[0]['reason'].split())})" if bypass else ""
        return f"the warm run hit no cache{why}, so a saved cache would not help as things are"
    how = (
        "save the caches after a run with `artifacts = torch.compiler.save_cache_artifacts()` (write "
        "`artifacts[0]` to a file) and call `torch.compiler.load_cache_artifacts(data)` before the first "
        "compile"
    )
    b, cold = w.get("bundle"), w["cold"]["compile_s"]
    if not b or b["exit_code"]:
        where = "to start warm on a fresh machine or container (CI, autoscaled serving)"
        return f"{where}, {how} (not measured here)"
    took = b["compile_s"] + (b.get("load_s") or 0.0)
    if took < 0.5 * cold:
        return (
            f"to start warm on a fresh machine or container (CI, autoscaled serving), {how}: measured in a "
            f"fresh process here, {took:.2f} s (loading included) instead of {cold:.2f} s cold"
        )
    left = b["parts"]["parts"]
    worst = max(left, key=left.get) if left else "nothing"
    return (
        f"torch's portable cache ({how}) saves little here: a fresh process with it loaded spent "
        f"{took:.2f} s "
        f"(loading included) against {cold:.2f} s cold, {left.get(worst, 0.0):.2f} s of it {worst}; "
        f"the local cache folder is what starts warm ({w['warm']['compile_s']:.2f} s)"
    )
