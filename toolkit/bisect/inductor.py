"""Hand an inductor failure over to torch's own `CompilerBisector` (passes, lowerings, configs).

`python -m fxlens.bisect.inductor SPEC.json` runs in a child process of `fxlens bisect` (it imports
torch; the CLI process does not). It calls `CompilerBisector.do_bisect(fn)`, where `fn` is one
more captured run of the user's script with only the culprit graph compiled by inductor and the
others by the stage before, and with `TORCH_BISECT_*` set the way torch's own
`python -m torch._inductor.compiler_bisector run` sets them for its subprocesses. The bisector's
state lives in a private inductor cache dir (it deletes that dir when it starts and ends). The
result goes to SPEC's `out` file as JSON.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def run_driver(spec: dict) -> dict:
    """Run CompilerBisector over `spec`'s script; returns {result, runs}."""
    cache = spec["cache_dir"]
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache  # before torch reads it (cache_dir())
    # fxlens's ladder already showed inductor is the first failing backend: start there
    os.environ["TORCH_BISECT_BACKEND"] = "inductor"
    from torch._inductor.compiler_bisector import CompilerBisector
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    from fxlens.bisect.runs import Runs

    runs = Runs(
        spec["script"],
        spec["args"],
        Path(spec["session_dir"]),
        spec["check"],
        timeout=spec.get("timeout"),
        echo=lambda line: print(line, flush=True),
        first=spec["first_run"],
    )
    runs.extra_env.update(spec.get("env") or {})
    reused = {"n": 0}

    def fn() -> bool:
        backend = CompilerBisector.get_backend()
        subsystem = CompilerBisector.get_subsystem()
        if backend == "inductor" and not subsystem:
            # the whole-inductor run is the one fxlens just did for this graph: known to fail
            reused["n"] += 1
            return False
        env = {
            "TORCH_COMPILE_BACKEND": backend,
            "TORCH_BISECT_BACKEND": backend,
            # with caches force-disabled inductor compiles in a fresh temporary cache dir, where
            # the run would not find the bisector's state files; bisection bypasses the caches anyway
            "TORCHINDUCTOR_FORCE_DISABLE_CACHES": "0",
        }
        state = ""
        if subsystem:
            env["TORCH_BISECT_SUBSYSTEM"] = subsystem
            state = CompilerBisector.get_run_state(backend, subsystem) or ""
            if state == "test_disable":
                env["TORCH_BISECT_MAX"] = "-1"  # disable the subsystem entirely, as torch's CLI does
        out = runs.run(
            f"inductor {subsystem} {state}".strip(),
            stage="inductor",
            good=spec["good"],
            graphs=str(spec["graph"]),
            env=env,
        )
        # like torch's own `compiler_bisector run`: any failure is "bad" (a config change that
        # crashes instead of diverging has not fixed the issue)
        return not out.failed

    CompilerBisector.in_process_cache = cache_dir()  # shared with the runs through the env
    result = CompilerBisector.do_bisect(fn)
    return {
        "result": None
        if result is None
        else {
            "backend": result.backend,
            "subsystem": result.subsystem,
            "bisect_number": result.bisect_number,
            "debug_info": result.debug_info,
        },
        "runs": [
            {"n": o.n, "label": o.label, "ok": not o.failed, "error": o.error, "seconds": round(o.seconds, 2)}
            for o in runs.outcomes
        ],
    }


def main() -> None:
    from fxlens.capture import children

    # the parent ends this driver's group with SIGTERM; the runs it started are groups of their
    # own, so end them first (else they would outlive both)
    children.install_sigterm()
    children.die_with_parent()  # fxlens killed, even by SIGKILL: so is this driver (its runs: below)
    spec = json.loads(Path(sys.argv[1]).read_text())
    try:
        out = run_driver(spec)
    except KeyboardInterrupt:
        children.end_all()
        sys.exit(143)
    except Exception as e:  # reported by the parent as "CompilerBisector did not finish"
        out = {"error": f"{type(e).__name__}: {e}", "runs": []}
    Path(spec["out"]).write_text(json.dumps(out, default=str))


if __name__ == "__main__":
    main()
