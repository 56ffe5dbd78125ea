"""doctor's numbers and findings on synthetic probe records and reports (no child process)."""

from fxlens.doctor.breaks import break_fix
from fxlens.doctor.findings import findings
from fxlens.probe.stats import RunStats, break_even, compile_seconds, function_rows, steady_ms
from fxlens.report.doctor_text import render_text


def _rec(name="f", times=(), compiles=None, **kw):
    times = list(times)
    base = {
        "index": 0,
        "name": name,
        "kind": "function",
        "def_file": "/u/train.py",
        "def_line": 5,
        "at_file": "/u/train.py",
        "at_line": 20,
        "at_ordinal": 0,
        "options": {"backend": "inductor", "dynamic": None, "mode": None, "fullgraph": False},
        "wrapped_in": None,
        "calls": len(times),
        "times_ms": times,
        "compiles": list(compiles or [0] * len(times)),
        "compile_ms": [0.0] * len(times),
        "outside_compile_ms": 0.0,
        "signatures": {"[(4,)]": len(times)},
        "shape_changes": 0,
    }
    base.update(kw)
    return base


def _run(mode, *recs):
    return [RunStats(mode, None, 1.0, 100 << 20, None, tuple(recs))]


def _report(**kw):
    base = {
        "source": {"script": "/u/train.py"},
        "graph_breaks": [],
        "recompile_causes": [],
        "recompile_limit_hits": [],
        "recompiles": [],
        "compile_times": {"per_compile": []},
    }
    base.update(kw)
    return base


def test_steady_state_skips_warmup_and_compiling_calls():
    rec = _rec(times=[900.0, 2.0, 50.0, 2.0, 4.0], compiles=[1, 0, 1, 0, 0])
    assert steady_ms(rec) == 2.0  # median of calls 2, 4, 5
    # compile time: what the compiling calls took beyond a steady call
    assert compile_seconds(rec, 2.0) == (898.0 + 48.0) / 1000
    assert steady_ms(_rec(times=[3.0])) == 3.0  # one call: that call is all there is
    assert steady_ms(_rec(times=[3.0], compiles=[1])) is None


def test_break_even():
    assert break_even(2.0, 3.0, 1.0) == 1000  # 2 s / 2 ms saved per call
    assert break_even(2.0, 1.0, 3.0) is None  # never pays off
    assert break_even(0.0, 3.0, 1.0) == 1


def test_rows_match_runs_and_take_medians():
    eager = [_run("eager", _rec(times=[5.0, 3.0, 3.0])), _run("eager", _rec(times=[5.0, 5.0, 5.0]))]
    compiled = [
        _run("compiled", _rec(times=[1001.0, 1.0, 1.0], compiles=[1, 0, 0])),
        _run("compiled", _rec(times=[501.0, 1.0, 1.0], compiles=[1, 0, 0])),
    ]
    (row,) = function_rows(eager, compiled)
    assert (row["eager_ms"], row["compiled_ms"], row["compile_s"]) == (4.0, 1.0, 0.75)
    assert row["speedup"] == 4.0 and row["break_even_calls"] == 250
    assert row["compiled_at"] == {"file": "/u/train.py", "line": 20}


def _rows(eager_times, compiled_times, compiles, **kw):
    return function_rows(
        [_run("eager", _rec(times=eager_times, **kw))],
        [_run("compiled", _rec(times=compiled_times, compiles=compiles, **kw))],
    )


def test_findings_ranked_by_cost_with_lines_and_fixes():
    rows = _rows([1.0] * 100, [500.0] + [3.0] * 99, [1] + [0] * 99)
    brk = {
        "reason": "Call to `torch._dynamo.graph_break()`",
        "file": "/u/train.py",
        "line": 7,
        "function": "f",
        "count": 1,
        "hints": [],
        "source": "torch._dynamo.graph_break()",
        "call_path": [],
        "compile_ids": ["0/0"],
    }
    # the profile of the replayed call: frame 0/0 spends 1.5 ms of a 3 ms call outside its graphs
    rows[0]["timing"]["segments"] = _segments({"0/0": 1.5})
    found = findings(rows, _report(graph_breaks=[brk]))
    assert [f["kind"] for f in found] == ["slower_than_eager", "graph_break"]
    slow, gb = found
    assert (slow["file"], slow["line"]) == ("/u/train.py", 20)  # the torch.compile call to change
    assert slow["cost_ms"] > gb["cost_ms"] > 0
    assert (gb["line"], gb["fix"]) == (7, "remove the `torch._dynamo.graph_break()` call")


def _segments(eager_ms: dict, call_ms: float = 3.0, outside: float = 0.0) -> dict:
    return {
        "call_ms": call_ms,
        "outside_regions_ms": outside,
        "graphs_seen": True,
        "frames": {
            cid: {"own_ms": ms + 0.5, "graph_ms": 0.5, "eager_ms": ms} for cid, ms in eager_ms.items()
        },
    }


def _break(line, cids, **kw):
    b = {
        "reason": "Call to `torch._dynamo.graph_break()`",
        "file": "/u/train.py",
        "line": line,
        "function": "f",
        "count": 1,
        "hints": [],
        "source": "torch._dynamo.graph_break()",
        "call_path": [],
        "compile_ids": cids,
    }
    b.update(kw)
    return b


def test_each_break_costs_its_own_measured_share():
    rows = _rows([1.0] * 100, [500.0] + [3.0] * 99, [1] + [0] * 99)
    rows[0]["timing"]["segments"] = _segments({"0/0": 0.03, "1/0": 1.8}, call_ms=3.0)
    found = {
        f["line"]: f
        for f in findings(rows, _report(graph_breaks=[_break(7, ["0/0"]), _break(9, ["1/0"])]))
        if f["kind"] == "graph_break"
    }
    assert "(1%, profiled)" in found[7]["message"] and "(60%, profiled)" in found[9]["message"]
    assert found[9]["cost_ms"] == 180.0 and found[7]["cost_ms"] == 3.0  # share x 3 ms x 100 calls
    # no profile (not re-timed): no share claimed, and says why
    rows[0]["timing"].pop("segments")
    (gb,) = [
        f for f in findings(rows, _report(graph_breaks=[_break(7, ["0/0"])])) if f["kind"] == "graph_break"
    ]
    assert gb["cost_ms"] == 0 and "not measured" in gb["message"] and "100%" not in gb["message"]


def test_library_break_names_the_frame_inside_and_a_switch_or_why_not():
    rows = _rows([1.0] * 20, [3.0] * 20, [0] * 20)
    lib = {
        "file": "transformers/models/wav2vec2/modeling_wav2vec2.py",
        "line": 418,
        "function": "forward",
        "code": "hidden_states.requires_grad = True",
    }
    b = _break(
        30,
        ["0/0"],
        reason="setattr() on Tensor.requires_grad",
        library=lib,
        source="out = cmodel(x)",
        hints=["Please report an issue to PyTorch"],
    )
    (gb,) = [f for f in findings(rows, _report(graph_breaks=[b])) if f["kind"] == "graph_break"]
    assert "inside forward at transformers/models/wav2vec2/modeling_wav2vec2.py:418" in gb["message"]
    assert "reached from your line /u/train.py:30 `out = cmodel(x)`" in gb["message"]
    assert "freeze_feature_encoder()" in gb["fix"] and "move" not in gb["fix"]
    other = dict(lib, file="transformers/utils/output_capturing.py", code="recordable_keys = {")
    (gb,) = [
        f
        for f in findings(rows, _report(graph_breaks=[dict(b, library=other, reason="Missing tp_iternext")]))
        if f["kind"] == "graph_break"
    ]
    assert gb["fix"].startswith("cannot be fixed from your code: the break is inside transformers ")
    hinted = dict(
        b,
        library=dict(lib, code="epsilon = x.item()", file="somelib/x.py"),
        reason="Data dependent operator",
        hints=["Enable tracing with `torch._dynamo.config.capture_scalar_outputs = True`"],
    )
    (gb,) = [f for f in findings(rows, _report(graph_breaks=[hinted])) if f["kind"] == "graph_break"]
    assert "torch._dynamo.config.capture_scalar_outputs = True" in gb["fix"]


def test_eager_frames_and_capture_only_backend_and_automatic_dynamic():
    rows = _rows([1.0] * 20, [3.0] * 20, [0] * 20, options={"backend": "eager", "dynamic": None})
    frame = {
        "compile_id": "2/0",
        "function": "f",
        "file": "/u/train.py",
        "line": 5,
        "reason": "Data-dependent branching",
        "source": "if x.sum() > 0:",
        "library": None,
        "hints": [],
        "frame": {"function": "f", "file": "/u/train.py", "line": 5},
    }
    found = findings(rows, _report(eager_frames=[frame]))
    kinds = [f["kind"] for f in found]
    assert kinds[0] == "capture_only_backend" and "eager_frame" in kinds
    assert "cannot make the function faster" in found[0]["message"] and "inductor" in found[0]["fix"]
    assert "timing_inconclusive" not in kinds  # no speed verdict to be inconclusive about
    (eager,) = [f for f in found if f["kind"] == "eager_frame"]
    assert "gave up on frame `f`" in eager["message"] and "branchless" in eager["fix"]
    cause = {
        "kind": "size",
        "file": "/u/train.py",
        "line": 5,
        "function": "f",
        "message": "size of x changed",
        "count": 3,
        "compile_ids": [],
        "fix": "mark it dynamic",
        "subject": "x",
    }
    rows[0]["distinct_shapes"] = 4
    (static,) = [
        f for f in findings(rows, _report(recompile_causes=[cause])) if f["kind"] == "static_shapes_changing"
    ]
    assert (
        "automatic dynamic shapes (`dynamic=None`" in static["message"]
        and "static shapes" not in static["message"].split("(")[0]
    )


def test_not_amortised_and_usage_findings():
    rows = _rows(
        [2.0] * 20, [5000.0] + [1.0] * 19, [1] + [0] * 19, options={"backend": "inductor", "dynamic": True}
    )
    kinds = {f["kind"]: f for f in findings(rows, _report())}
    assert set(kinds) == {"compile_not_amortised", "dynamic_unneeded"}
    assert "4999 calls" in kinds["compile_not_amortised"]["message"]
    wrapped = _rows([1.0] * 3, [1.0] * 3, None, wrapped_in="DistributedDataParallel")
    found = {f["kind"]: f for f in findings(wrapped, _report())}
    # 2 warm calls a side: no interval, so no verdict on speed, only that it cannot tell
    assert set(found) == {"compiled_after_wrap", "timing_inconclusive"}
    assert "model.compile()" in found["compiled_after_wrap"]["fix"]
    assert "2 sample(s) a side" in found["timing_inconclusive"]["message"]


def test_failed_compiled_run_ranks_first():
    rows = _rows([1.0] * 20, [100.0] * 20, None)
    found = findings(rows, _report(), failed="the compiled run exited with status 1")
    assert [f["kind"] for f in found] == ["compiled_run_failed", "slower_than_eager"]


def test_break_fix_falls_back_to_torch_hint():
    assert "capture_scalar_outputs" in break_fix("Unsupported Tensor.item() call", [], "x.item()")
    assert break_fix("Something new", ["Do X instead."], "y") == "Do X instead."
    assert break_fix("Something new", [], "y = g(x)") == "move `y = g(x)` out of the compiled function"


def test_render_text_has_tables_and_findings():
    rows = _rows([1.0] * 20, [100.0] * 20, None)
    result = {
        "script": "/u/train.py",
        "summary": "train.py: 1 compiled function(s)",
        "functions": rows,
        "peak_memory": {"eager": 100 << 20, "compiled": 150 << 20, "kind": "process_rss"},
        "wall": {"eager_s": 1.0, "compiled_s": 2.0},
        "findings": findings(rows, _report()),
        "session": "/tmp/s",
    }
    text = render_text(result)
    assert "compiled ms" in text and "pays off after" in text and "never" in text
    assert "150 MiB" in text and "[slower_than_eager]" in text


def test_split_times_separates_graphs_from_the_eager_code_between_them():
    from fxlens.probe.segments import split_times

    # one call 0..100 us: frame 0/0 (0..90) calls graph A (0..20), then eager code, then its resume
    # frame 1/0 (50..90), which calls graph B (55..85); 90..100 is outside every compiled frame
    events = [
        ("Torch-Compiled Region: 0/0", 0.0, 90.0),
        ("## Call CompiledFxGraph a ##", 0.0, 20.0),
        ("Torch-Compiled Region: 1/0", 50.0, 90.0),
        ("## Call CompiledFxGraph b ##", 55.0, 85.0),
        ("aten::mul", 25.0, 45.0),
    ]
    got = split_times(events, [(0.0, 100.0)])
    assert got["call_ms"] == 0.1 and got["outside_regions_ms"] == 0.01 and got["graphs_seen"]
    assert got["frames"]["0/0"] == {"own_ms": 0.05, "graph_ms": 0.02, "eager_ms": 0.03}
    assert got["frames"]["1/0"] == {"own_ms": 0.04, "graph_ms": 0.03, "eager_ms": 0.01}


def test_split_times_takes_the_profilers_own_cost_out_of_each_segment():
    from fxlens.probe.segments import split_times

    # 10 recorded ops between the graphs; the call took 0.1 ms profiled, 0.05 ms without the
    # profiler: 0.05 ms over 14 events is ~3.6 us each, taken out of the eager segment's 10 ops
    events = [
        ("Torch-Compiled Region: 0/0", 0.0, 100.0),
        ("## Call CompiledFxGraph a ##", 0.0, 20.0),
        ("## Call CompiledFxGraph b ##", 80.0, 100.0),
        *[(f"aten::mul {i}", 20.0 + 6 * i, 25.0 + 6 * i) for i in range(10)],
        ("aten::empty", 5.0, 6.0),  # inside graph a: not the eager segment's
    ]
    got = split_times(events, [(0.0, 100.0)], plain_ms=0.05)
    assert got["call_ms"] == 0.05 and round(got["per_event_us"], 2) == round(50 / 14, 2)
    assert got["frames"]["0/0"]["eager_ms"] == round(0.06 - 10 * 0.05 / 14, 4)


def test_a_bare_break_at_the_call_line_is_explained_by_the_frame_inside():
    # torch's record of a failed backend compile: reason "graph break", no library frame, the user's
    # line is the call of the compiled model; the frame inside comes from the call path and the
    # reason from the failed compile (as recorded for HF Wav2Vec2 in training mode)
    rows = _rows([1.0] * 20, [3.0] * 20, [0] * 20)
    path = "/venv/lib/python3.11/site-packages/transformers/models/wav2vec2/modeling_wav2vec2.py"
    b = _break(64, ["13/0"], reason="graph break", function="<module>", source="loss = cmodel(x)")
    b["call_path"] = [{"function": "_mask_hidden_states", "file": path, "line": 1246, "code": ""}]
    report = _report(
        graph_breaks=[b],
        compile_times={
            "per_compile": [
                {"compile_id": "13/0", "total_s": 1.0, "fail_reason": "Backend compiler exception\n  more"}
            ]
        },
    )
    (gb,) = [f for f in findings(rows, report) if f["kind"] == "graph_break"]
    assert (
        "inside _mask_hidden_states at transformers/models/wav2vec2/modeling_wav2vec2.py:1246"
        in gb["message"]
    )
    assert ": Backend compiler exception;" in gb["message"] and "move `" not in gb["fix"]
    assert "mask_time_prob = 0" in gb["fix"]
    # nothing names a frame inside: say so, never "move the call of the compiled model out"
    b2 = dict(b, call_path=[], compile_ids=["1/0"])
    (gb,) = [f for f in findings(rows, _report(graph_breaks=[b2])) if f["kind"] == "graph_break"]
    assert gb["fix"].startswith("the break is inside the compiled call")
