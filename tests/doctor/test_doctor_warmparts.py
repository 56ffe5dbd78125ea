"""What a compile spends, by part (fxlens.doctor.warmparts), against torch's own in-process metrics.

Ground truth: the script itself dumps `torch._dynamo.utils.compilation_time_metrics` (the seconds of
every `dynamo_timed` event, kept by torch in the process) at exit; fxlens reads the same events from
the run's trace log instead. Guard building, Dynamo's tracing and the whole compile must agree.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from fxlens.doctor.warmparts import part_of, warm_parts
from fxlens.report.doctor_text import parts_text

SCRIPT = """
import atexit, json, sys
import torch

def dump():
    from torch._dynamo.utils import compilation_time_metrics
    json.dump({k: list(v) for k, v in compilation_time_metrics.items()}, open(sys.argv[1], "w"))

atexit.register(dump)

def f(x, n):
    for i in range(n):
        x = torch.sin(x) + i
    return x

g = torch.compile(f, backend="eager")
for n in (20, 40):
    g(torch.randn(8), n)
"""


def test_parts_agree_with_torchs_in_process_metrics(tmp_path):
    (tmp_path / "s.py").write_text(SCRIPT)
    metrics = tmp_path / "m.json"
    env = {**os.environ, "FXLENS_SESSIONS_DIR": str(tmp_path / "sessions")}
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "fxlens.cli", "run", "--session", str(run), "s.py", str(metrics)]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    torch_s = json.loads(metrics.read_text())
    got = warm_parts(tmp_path / "run" / "trace")
    assert len(got["per_compile"]) == 2  # n is a constant: a second compile
    # every event's self seconds land in one part: the parts sum to the compiles' outermost events,
    # torch's frame compile (`_compile.compile_inner`) and the few ms of the wrapper around it
    frame = sum(torch_s["_compile.compile_inner"])
    assert frame - 0.005 <= got["total_s"] <= frame * 1.05 + 0.05
    guards = sum(torch_s["build_guards"])
    assert abs(got["parts"]["guard building"] - guards) <= 0.005 + 0.02 * guards
    # Dynamo's tracing is its bytecode tracing and the frame's own overhead (no backend here)
    tracing = got["parts"]["dynamo tracing"]
    assert sum(torch_s["bytecode_tracing"]) <= tracing + 0.005
    assert tracing <= frame - guards + 0.05
    assert set(got["parts"]) <= {"dynamo tracing", "guard building", "other"}


def test_part_names():
    assert part_of("build_guards", "dynamo") == "guard building"
    assert part_of("bytecode_tracing", "dynamo") == "dynamo tracing"
    assert part_of("PyCodeCache.load_by_key_path", "backend") == "kernel loading"
    assert part_of("compile_file", "backend") == "kernel loading"  # a C++ kernel built while loading
    assert part_of("compile_file", "inductor") == "compiling (not from a cache)"
    assert part_of("CacheBase.get_system.triton_key", "backend") == "cache keys"
    assert part_of("AOTAutogradCache.inductor_load", "backend") == "cache lookups and loading"
    assert part_of("Scheduler.codegen", "inductor") == "compiling (not from a cache)"
    assert parts_text({"a": 0.5, "b": 2.0}) == "b 2.00 s, a 0.50 s"
