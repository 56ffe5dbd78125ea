"""`fxlens diff` on report JSON files that are not well formed (issue 20.6: "internal error", exit
70, no word of what was wrong), and every cut of its guard lists said."""

import json

import pytest

from fxlens.diff.compare import compare
from fxlens.diff.render import render_text


def _report(**over) -> dict:
    base = {
        "source": {"script": "/w/model.py"},
        "ranks": [None],
        "graphs": [
            {
                "compile_id": "0/0",
                "rank": None,
                "function": "f",
                "file": "/w/model.py",
                "line": 3,
                "num_nodes": 4,
                "ops": ["aten.sin.default"],
            }
        ],
        "graph_breaks": [
            {
                "function": "f",
                "file": "/w/model.py",
                "line": 5,
                "reason": "print",
                "count": 1,
                "source": "print()",
            }
        ],
        "recompiles": [],
        "recompile_causes": [],
        "recompile_limit_hits": [],
        "failures": [],
        "compile_times": {
            "total_s": 0.5,
            "per_compile": [
                {"compile_id": "0/0", "rank": None, "function": "f", "total_s": 0.5, "guard_count": 3}
            ],
        },
        "kernels": [],
        "fallbacks": [],
        "events": [],
        "guards": [],
    }
    return {**base, **over}


def _write(path, data) -> str:
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


BAD = {
    "deep_nesting": (
        '{"graphs": ' + "[" * 50000 + "]" * 50000 + ', "graph_breaks": []}',
        "nested too deeply",
    ),
    "count_a_string": (
        _report(graph_breaks=[{"function": "f", "file": "m.py", "line": 5, "reason": "r", "count": "two"}]),
        "graph_breaks[0].count: expected an integer, got the string 'two'",
    ),
    "function_a_list": (
        _report(graphs=[{**_report()["graphs"][0], "function": ["f"]}]),
        "graphs[0].function: expected a string, got a list",
    ),
    "graphs_not_a_list": (_report(graphs=5), "graphs: expected a list, got the number 5"),
    "item_not_an_object": (_report(graph_breaks=["x"]), "graph_breaks[0]: expected an object"),
    "missing_field": (_report(graphs=[{"compile_id": "0/0"}]), "graphs[0]: no 'rank' field"),
    "compile_times_wrong": (
        _report(compile_times={"total_s": "x"}),
        "compile_times.total_s: expected a number",
    ),
    "nested_guard_list": (
        _report(guards=[{"compile_id": "0/0", "rank": None, "guards": [["x"]]}]),
        "guards[0].guards: expected strings, got a list",
    ),
    "line_a_bool": (
        _report(graph_breaks=[{"function": "f", "line": True, "reason": "r", "count": 1}]),
        "graph_breaks[0].line: expected an integer or null, got a boolean",
    ),
}


@pytest.mark.parametrize("case", list(BAD))
def test_malformed_report_json_is_one_line(fxlens, tmp_path, case):
    data, needle = BAD[case]
    good = _write(tmp_path / "a.json", _report())
    bad = _write(tmp_path / "b.json", data)
    for args in ((good, bad), (bad, good)):
        res = fxlens("diff", *args)
        assert res.returncode == 2, (res.stdout, res.stderr)
        (line,) = res.stderr.strip().splitlines()
        assert line.startswith(f"fxlens diff: error: {bad}: ") and needle in line, line
        assert "internal error" not in res.stderr


def test_well_formed_reports_still_compare(fxlens, tmp_path):
    res = fxlens("diff", _write(tmp_path / "a.json", _report()), _write(tmp_path / "b.json", _report()))
    assert res.returncode == 0, res.stderr
    assert "B is no worse than A" in res.stdout


def test_guard_counts_match_what_is_listed():
    graphs = _report()["graphs"]
    a = _report(guards=[{"compile_id": "0/0", "rank": None, "guards": ["G_old"]}])
    b = _report(
        guards=[{"compile_id": "0/0", "rank": None, "guards": [f"G_new_{i}" for i in range(9)]}],
        graphs=graphs,
    )
    text = render_text(compare(a, b))
    assert "1 new" not in text and "9 new, 1 gone" in text
    listed = [ln for ln in text.splitlines() if ln.startswith("  + G_new_")]
    assert len(listed) == 8 and "  + ... 1 more (see --json)" in text
