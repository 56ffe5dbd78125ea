"""doctor's memory by cause: planted scripts, each cause named with its line, checked by hand.

Each planted script (tests/doctor/scripts/mem_*.py) runs with real torch.compile in a fresh process
(tests/doctor/memdriver.py), which measures its compiled function the way doctor's probe does and
counts saved tensors by hand beside it; the named cause must sit on the line that makes it.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from doctor_helpers import SCRIPTS, fxlens

from fxlens.doctor.memcauses import function_memory, memory_breakdown, run_breakdown
from fxlens.trace.session import Session

DRIVER = Path(__file__).parent / "memdriver.py"


def _drive(script: str, name: str, *extra: str, trace: Path | None = None) -> dict:
    env = dict(os.environ)
    if trace is not None:
        env["TORCH_TRACE"] = str(trace)
    done = subprocess.run(
        [sys.executable, str(DRIVER), str(SCRIPTS / script), name, *extra],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(next(ln for ln in done.stdout.splitlines() if ln.startswith("{")))


def _line_of(script: str, text: str) -> int:
    lines = (SCRIPTS / script).read_text().split("\n")
    return next(i for i, ln in enumerate(lines, 1) if text in ln and not ln.lstrip().startswith("#"))


def _rec(memory: dict, script: str, name: str) -> dict:
    return {
        "name": name,
        "def_file": str(SCRIPTS / script),
        "def_line": 1,
        "at_file": str(SCRIPTS / script),
        "at_line": 1,
        "bench": {"memory": memory},
    }


@pytest.mark.slow
def test_recompile_storm_holds_one_constant_per_shape(tmp_path):
    out = _drive("mem_storm.py", "f", trace=tmp_path)
    held = out["memory"]["held"]
    # one cache entry per input length the script used, each holding its own 4 MiB table
    assert len(held["entries"]) == 6
    assert [e["bytes"] for e in held["entries"]] == [4 << 20] * 6
    session = Session.open(tmp_path)
    from fxlens.doctor.memcauses import _dynamo_graphs

    f = function_memory(_rec(out["memory"], "mem_storm.py", "lookup"), [], _dynamo_graphs(session))
    part = next(p for p in f["parts"] if p["cause"] == "held_by_compiled_code")
    assert part["entries_holding"] == 6
    assert part["largest"][0]["line"] == _line_of("mem_storm.py", "x @ table()")
    # the parts add up to the measured difference, remainder included
    assert sum(p["bytes"] for p in f["parts"]) == f["difference"]


@pytest.mark.slow
def test_compiled_partition_saves_more_named_by_op_and_line(tmp_path):
    out = _drive("mem_saved.py", "step", "backward", trace=tmp_path)
    mem, hand = out["memory"], out["by_hand_saved"]
    assert mem["eager"]["saved"]["bytes"] == hand["eager"]
    assert mem["compiled"]["saved"]["bytes"] == hand["compiled"]
    assert hand["compiled"] > hand["eager"]
    from fxlens.doctor.memcauses import _aot_graphs

    f = function_memory(_rec(mem, "mem_saved.py", "Net.forward"), _aot_graphs(Session.open(tmp_path)), [])
    part = next(p for p in f["parts"] if p["cause"] == "saved_activations")
    assert part["bytes"] == hand["compiled"] - hand["eager"]
    top = part["compiled_top"]
    assert top and all(t["line"] == _line_of("mem_saved.py", "F.normalize(h") for t in top)
    assert {t["op"] for t in top} <= {"mul", "linalg_vector_norm", "div", "clamp_min", "expand"}
    # the profiler's peak covers the backward too: above the forward's own peak
    assert mem["compiled"]["peak"] >= mem["compiled"]["forward_peak"] > 0
    assert sum(p["bytes"] for p in f["parts"]) == f["difference"]


@pytest.mark.slow
def test_frozen_constant_held_beside_the_parameter(tmp_path):
    out = _drive("mem_frozen.py", "fast", "no_grad", trace=tmp_path)
    held = out["memory"]["held"]
    names = [t["name"] for e in held["entries"] for t in e["tensors"]]
    assert any(n.startswith("_frozen_param") for n in names), names
    # the folded `w * 2` is a new 1024 x 1024 float32 tensor: at least its 4 MiB
    assert held["bytes"] >= 4 << 20
    from fxlens.doctor.memcauses import _held_cause

    rec = _rec(out["memory"], "mem_frozen.py", "Scaled.forward")
    f = function_memory(rec, [], [])
    cause = _held_cause(f, next(p for p in f["parts"] if p["cause"] == "held_by_compiled_code"), rec)
    assert {
        "kind": "config",
        "params": {"name": "inductor.freezing", "value": False, "target": "peak_memory"},
    } in cause["actions"]


def test_run_breakdown_adds_up_to_the_rss_difference():
    eager = {"start": {"max": 100}, "compiles": [], "end": {"max": 500}}
    compiled = {
        "start": {"max": 110},
        "compiles": [{"peak_growth": 300}, {"peak_growth": 50}],
        "end": {"max": 900},
    }
    parts = run_breakdown(eager, compiled, held=40, call_tensors=20)
    assert sum(p["bytes"] for p in parts) == 900 - 500
    by = {p["cause"]: p["bytes"] for p in parts}
    assert by["before_script"] == 10 and by["compiler"] == 350 - 40 and by["held_by_compiled_code"] == 40


@pytest.mark.slow
def test_doctor_names_the_storm_in_its_json(tmp_path):
    out = tmp_path / "d.json"
    done = fxlens("doctor", "--budget", "1", "--json", out, SCRIPTS / "mem_storm.py", env_root=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    mem = json.loads(out.read_text())["peak_memory"]
    assert {"eager", "compiled", "breakdown", "causes", "functions"} <= set(mem)
    total = mem["rss"]["compiled"] - mem["rss"]["eager"]
    assert sum(p["bytes"] for p in mem["breakdown"]) == total
    cause = next(c for c in mem["causes"] if c["cause"] == "held_by_compiled_code")
    assert cause["line"] == _line_of("mem_storm.py", "x @ table()") and cause["bytes"] == 6 * (4 << 20)
    assert {a["kind"] for a in cause["actions"]} >= {"dynamic", "config"}
    assert "Memory by cause" in done.stdout
    assert memory_breakdown  # the module the JSON came from


def test_measure_agrees_with_the_profiler_and_hooks_by_hand():
    """In this process, on a small module (backend eager: compiles in a second): the peak and the
    saved bytes doctor's measurement gives equal a by-hand profiler sum and a by-hand hooks count."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from fxlens.probe.memprobe import measure

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(128, 512), torch.nn.GELU(), torch.nn.Linear(512, 8))
    x = torch.randn(256, 128)
    compiled = torch.compile(net, backend="eager")
    compiled(x).sum().backward()
    out = measure(net, compiled, (x,), {}, backward=False)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        y = net(x)
        del y
    events = sorted(
        (e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"),
        key=lambda e: e.start_ns(),
    )
    level = peak = 0
    for e in events:
        level += e.nbytes()
        peak = max(peak, level)
    assert out["eager"]["peak"] == peak
    skip = {p.untyped_storage().data_ptr() for p in net.parameters()} | {x.untyped_storage().data_ptr()}
    sys.path.insert(0, str(DRIVER.parent))
    from memdriver import by_hand_saved

    assert out["eager"]["saved"]["bytes"] == by_hand_saved(net, (x,), skip) > 0
    assert out["compiled"]["saved"]["bytes"] == by_hand_saved(compiled, (x,), skip)
    assert out["held"]["bytes"] == 0  # backend eager holds nothing of its own
