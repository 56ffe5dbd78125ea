"""tlparse's views in the report: per-compile stages and cache outcome, failures and restarts in
full, and `--perfetto` merging every rank's Chromium events -- on real traces."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).parent / "scripts"
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ranks"))
from rank_replicas import replicate  # noqa: E402


def _trace(script: str, trace: Path, *args: str, env: dict | None = None) -> Path:
    proc = subprocess.run(
        [sys.executable, str(SCRIPTS / script), *args],
        env={**os.environ, "TORCH_TRACE": str(trace), **(env or {})},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return trace


def _report(path: Path, tmp_path: Path, *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    out = tmp_path / "r.json"
    proc = subprocess.run(
        [sys.executable, "-m", "fxlens.cli", "report", str(path), "--json", str(out), *extra],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc, json.loads(out.read_text())


def test_failures_and_restarts_with_whole_reasons(stages_trace, tmp_path):
    proc, report = _report(stages_trace, tmp_path)
    events = {(e["function"], e["kind"]): e for e in report["failures_and_restarts"]}
    restart = events[("f", "restart")]
    # the whole reason torch logged, not its first line
    assert restart["reason"].startswith("Failed to trace builtin operator")
    assert "Explanation: Dynamo does not know how to trace builtin operator `print`" in restart["reason"]
    failure = events[("<lambda>", "failure")]
    assert failure["type"] == "BackendCompilerFailed"
    assert "RuntimeError: the backend failed on purpose" in failure["reason"]
    assert "Restarts (Dynamo analysed the frame again; whole reasons):\n  0/0 f\n" in proc.stdout
    assert "RuntimeError: the backend failed on purpose" in proc.stdout


def test_compile_stages_per_compile(stages_trace, tmp_path):
    _, report = _report(stages_trace, tmp_path)
    # the one per-compile list: every compilation_metrics record the logs hold, one row each
    (log,) = stages_trace.glob("*.log")
    logged = log.read_text().count('{"compilation_metrics"')
    per = report["compile_times"]["per_compile"]
    assert len(per) == logged and "compiles" not in report
    rows = {r["compile_id"]: r for r in per if r["function"] == "f"}
    stages = rows["0/0"]["stages_s"]
    # aot_eager: Dynamo and AOTAutograd time, no inductor; AOTAutograd runs inside Dynamo's time
    assert set(stages) == {"dynamo", "aot_autograd"}
    assert 0 < stages["aot_autograd"] <= stages["dynamo"]
    assert rows["0/0"]["cache"] == {}  # aot_eager consults no compiled-graph cache
    assert rows["0/0"]["inductor_s"] is None and rows["0/0"]["backend_s"] is not None
    restarted = [r for r in per if r["restart_reasons"]]
    assert [(r["compile_id"], r["function"]) for r in restarted] == [("0/0", "f")]
    assert not restarted[0]["fail_type"]
    (failed,) = [r for r in per if r["fail_type"]]
    assert failed["fail_type"] == "BackendCompilerFailed" and failed["function"] == "<lambda>"


def test_perfetto_merges_every_rank(tmp_path):
    """The real 2-rank gloo trace: one trace, one process per rank, every chromium event kept."""
    trace = replicate(tmp_path / "trace", 2, (1,))
    out = tmp_path / "trace.json"
    proc, _ = _report(trace, tmp_path, "--perfetto", str(out))
    events = json.loads(out.read_text())["traceEvents"]
    logged = sum(p.read_text().count('{"chromium_event"') for p in trace.glob("*.log"))
    names = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M"}
    assert names == {0: "rank 0", 1: "rank 1"}
    assert len(events) - len(names) == logged
    for pid in (0, 1):  # every begin has its end, on each rank
        phases = [e["ph"] for e in events if e["pid"] == pid]
        assert phases.count("B") == phases.count("E") > 0
    # rank 1 recompiled: its events name compile 0/1, rank 0's never do
    ids = {pid: {e.get("args", {}).get("compile_id") for e in events if e["pid"] == pid} for pid in (0, 1)}
    assert "0/1" in ids[1] and "0/1" not in ids[0]
    assert f"wrote {out}" in proc.stderr


@pytest.mark.slow
def test_inductor_cache_miss_then_hit(tmp_path):
    """Inductor twice with one cache dir: the first run misses torch's FX graph cache, the second hits."""
    env = {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "cache")}
    first = _trace("compile_stages.py", tmp_path / "t1", env=env)
    second = _trace("compile_stages.py", tmp_path / "t2", env=env)
    caches = []
    for t in (first, second):
        proc, report = _report(t, tmp_path)
        row = next(r for r in report["compile_times"]["per_compile"] if r["compile_id"] == "0/0")
        fx = row["cache"].get("inductor_fx_local") or {}
        assert "inductor" in row["stages_s"] or fx.get("hits")
        caches.append({(0, 1): "miss", (1, 0): "hit"}.get((int(fx.get("hits") or 0), int(fx.get("misses") or 0))))
    assert caches == ["miss", "hit"]


def test_specialization_with_the_guard_it_added_and_stacks(specialize_trace, tmp_path):
    proc, report = _report(specialize_trace, tmp_path)
    (s,) = report["specializations"]
    assert (s["compile_id"], s["function"], s["value"]) == ("0/0", "f", "8")
    assert s["sources"] == ["L['x'].size()[0]"] and s["reason"] == "range_refined_to_singleton"
    # the user's line that caused it, and torch's whole stack
    (user,) = s["user_stack"]
    assert (Path(user["file"]).name, user["line"], user["function"]) == ("specialize.py", 8, "f")
    assert len(s["stack"]) > len(s["user_stack"])
    # the guard it added, with the same user line
    (g,) = s["guards"]
    assert g["expr"] == f"Eq({s['symbol']}, 8)" and g["user_stack"][-1]["line"] == 8
    assert f"0/0 f: L['x'].size()[0] ({s['symbol']}) = 8 [range_refined_to_singleton]" in proc.stdout
    assert f"guard added: Eq({s['symbol']}, 8)" in proc.stdout


def test_stack_trie_merges_ranks_and_marks_outcomes(tmp_path, stages_trace):
    """The real gloo trace on 4 ranks (rank 3 recompiles), and a trace with a break and a failure."""
    trace = replicate(tmp_path / "trace", 4, (3,))
    proc, report = _report(trace, tmp_path)
    (root,) = report["stack_trie"]
    assert root["function"] == "<module>"
    (train,) = root["children"]
    (fwd,) = train["children"]
    assert (train["function"], fwd["function"], fwd["line"]) == ("_train", "forward", 38)
    assert fwd["compiles"] == [
        {"compile_id": "0/0", "outcome": "ok", "ranks": [0, 1, 2, 3]},
        {"compile_id": "0/1", "outcome": "recompile", "ranks": [3]},
    ]
    assert "record_gloo.py:38 forward: 0/0 (ranks 0-3), 0/1 recompile (rank 3)" in proc.stdout

    _, report = _report(stages_trace, tmp_path)
    leaves = {}

    def walk(nodes):
        for n in nodes:
            for c in n["compiles"]:
                leaves[c["compile_id"]] = (n["function"], c["outcome"])
            walk(n["children"])

    walk(report["stack_trie"])
    assert leaves["0/0"] == ("f", "graph break")
    assert leaves["2/0"] == ("<lambda>", "failed")


@pytest.mark.slow
def test_inductor_output_code_with_provenance(tmp_path):
    """Inductor with INDUCTOR_PROVENANCE=1: each kernel maps to the post-grad nodes it fuses and the
    user line they came from."""
    env = {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "cache"), "INDUCTOR_PROVENANCE": "1"}
    trace = _trace("compile_stages.py", tmp_path / "trace", env=env)
    proc, report = _report(trace, tmp_path)
    by_cid = {e["compile_id"]: e for e in report["output_code"]}
    first = by_cid["0/0"]
    assert first["provenance"] and first["file"].endswith(".py") and first["lines"] > 10
    (kernel,) = first["kernels"]
    assert kernel["name"].startswith("cpp_fused") and "sin" in kernel["name"]
    assert {"sin", "mul"} <= set(kernel["post_grad_nodes"])
    assert any("compile_stages.py" in s for s in kernel["stack"])
    assert f"    {kernel['name']} <- " in proc.stdout and "compile_stages.py:" in proc.stdout
