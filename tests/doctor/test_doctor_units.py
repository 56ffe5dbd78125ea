"""doctor's numbers and findings on synthetic probe records and reports (no child process)."""

from fxlens.doctor.command import render_text
from fxlens.doctor.findings import break_fix, findings
from fxlens.doctor.stats import RunStats, break_even, compile_seconds, function_rows, steady_ms


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
    }
    found = findings(rows, _report(graph_breaks=[brk]))
    assert [f["kind"] for f in found] == ["slower_than_eager", "graph_break"]
    slow, gb = found
    assert (slow["file"], slow["line"]) == ("/u/train.py", 20)  # the torch.compile call to change
    assert slow["cost_ms"] > gb["cost_ms"] > 0
    assert (gb["line"], gb["fix"]) == (7, "remove the `torch._dynamo.graph_break()` call")


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
