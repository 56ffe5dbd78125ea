"""What a minify worker runs, in its own process: resolve the backend once, then evaluate the
candidates (reproducer source text) read as JSON lines on stdin, each answered with its failure
signature on the pipe named by FXLENS_MINIFY_RESULT_FD (stdout belongs to the backend).

Started as `python -m fxlens.minify.worker_loop` by the pool (`fxlens.minify.workers`), or forked
from the zygote (`fxlens.minify.verify`). Imports nothing heavy until it runs: the zygote imports
this module while it is still idle.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time

from fxlens.backend.stages import stage
from fxlens.capture import children


def worker_main() -> int:
    """The worker loop (runs in the child): evaluate candidate sources read from stdin."""
    children.die_with_parent()  # fxlens killed, even by SIGKILL: so is this worker
    out = os.fdopen(int(os.environ["FXLENS_MINIFY_RESULT_FD"]), "w")

    def answer(d: dict) -> None:
        out.write(json.dumps(d) + "\n")
        out.flush()

    try:
        import torch

        from fxlens.capture.backends import resolve
        from fxlens.minify.capture import baseline_config_lines

        # warm Dynamo up while the parent still captures (the first candidate then compiles faster)
        # with the probe compile that reads the config lines a plain compile shows, which the
        # parent subtracts from the script's: the parent then never imports Dynamo and inductor
        baseline = sorted(baseline_config_lines())
        answer({"warm": time.time(), "baseline": baseline})
        backend_spec = json.loads(sys.stdin.readline() or "{}").get("backend", "")
        backend = resolve(backend_spec)
        _warm_backend(torch, backend_spec)
    except BaseException as e:  # report and exit: the parent says the worker failed to start
        answer({"ready": False, "error": f"{type(e).__name__}: {e}"})
        return 1
    answer({"ready": True})
    for line in sys.stdin:
        msg = json.loads(line)
        t0 = time.perf_counter()
        namespace: dict = {"__name__": "fxlens_candidate"}
        try:
            exec(compile(msg["src"], "<fxlens candidate>", "exec"), namespace)
            sig = _evaluate(namespace, backend, backend_spec, msg.get("call"))
        except Exception as e:  # the candidate itself is broken (e.g. inputs cannot be built)
            sig = f"candidate error: {type(e).__name__}: {e}"
        finally:
            torch.compiler.reset()  # forget compiled candidates: memory and recompile limits
        answer({"sig": sig, "seconds": round(time.perf_counter() - t0, 3)})
    return 0


def _warm_backend(torch, spec: str) -> None:
    """Import what the backend compiles with, and for inductor compile one tiny graph (its
    first compile pays for imports and C++ toolchain probing), before the first candidate."""
    if getattr(stage(spec), "inner", None) == "inductor":
        try:
            torch.compile(lambda x: x * 2 + 1, backend="inductor")(torch.ones(8))
        except Exception:  # a broken inductor shows on the first candidate, with its signature
            pass
        torch.compiler.reset()
    else:
        for module in getattr(stage(spec), "preload", ()):
            importlib.import_module(module)


def _evaluate(ns: dict, backend, backend_spec: str, call: str | None) -> str | None:
    """One candidate's signature, at its level (the Dynamo graph, or an ATen graph compiled by
    the backend's inner compiler); or the result of the function `call`."""
    if call:
        return ns[call](backend, backend_spec)
    if ns.get("LEVEL", "dynamo") != "dynamo":
        compiler = ns["load_inner"](backend)
        return ns["run_aten_check"](ns["Repro"], ns["make_inputs"], compiler, ns["CHECK"], ns["DYNAMIC"])
    return ns["run_check"](
        ns["Repro"],
        ns["make_inputs"],
        backend,
        ns["CHECK"],
        ns["BACKWARD"],
        ns["DYNAMIC"],
        autocast=ns.get("AUTOCAST", ""),
        mutate=ns.get("MUTATE", False),
    )


if __name__ == "__main__":
    # stdout belongs to the backend; answers go to the pipe named in the environment
    sys.exit(worker_main())
