"""`fxlens diff` on real runs of one script before and after a code change."""

from __future__ import annotations

import json

import pytest
from schema_check import validate

from fxlens.diff.command import diff_paths
from fxlens.diff.compare import GATED, compare, match
from fxlens.diff.render import render_text


@pytest.fixture(scope="module")
def worse(pair):
    return diff_paths(str(pair.v1), str(pair.v2))


def _break(diff, reason_part):
    (item,) = [b for b in diff["graph_breaks"] if reason_part in b["reason"]]
    return item


def test_json_keys(worse):
    assert {
        "version",
        "a",
        "b",
        "counts",
        "worse",
        "worse_on",
        "better_on",
        "graph_breaks",
        "recompile_causes",
        "recompile_limit_hits",
        "failures",
        "functions",
        "guards",
        "fallbacks",
        "compile_time",
        "doctor",
    } <= set(worse)
    assert [c["name"] for c in worse["counts"] if c["gated"]] == list(GATED)
    assert worse["doctor"] is None  # neither session ran fxlens doctor


def test_moved_break_reads_as_moved_not_new_and_gone(worse):
    printed = _break(worse, "builtin operator")
    assert printed["status"] == "moved"
    assert (printed["a"]["line"], printed["b"]["line"]) == (8, 10)
    assert printed["function"] == "step" and printed["file"] == "model.py"


def test_new_break_and_new_recompile(worse):
    branch = _break(worse, "Data-dependent")
    assert branch["status"] == "new" and branch["line"] == 11 and branch["a"] is None
    (cause,) = worse["recompile_causes"]
    assert cause["status"] == "new" and cause["function"] == "step"
    assert "dim 0" in cause["subject"] and "4, 3" in cause["b"]["message"]
    assert worse["worse"] and {"graph_breaks", "graph_break_sites", "recompiles", "graphs"} <= set(
        worse["worse_on"]
    )
    (fn,) = worse["functions"]
    assert fn["status"] == "changed" and fn["a"]["graphs"] < fn["b"]["graphs"]


def test_cli_exit_status_gates_ci(pair, tmp_path, fxlens):
    out = tmp_path / "diff.json"
    proc = fxlens("diff", "--json", out, pair.v1, pair.v2)
    assert proc.returncode == 1, proc.stderr
    assert "> moved" in proc.stdout and "model.py:8 -> 10" in proc.stdout
    assert "+ new" in proc.stdout and proc.stdout.rstrip().splitlines()[-1].startswith("verdict: B is WORSE")
    diff = json.loads(out.read_text())
    validate("diff", diff)
    assert diff["worse"] is True
    better = fxlens("diff", pair.v2, pair.v1)  # the change undone: better, so exit 0
    assert better.returncode == 0, better.stdout
    assert "no worse" in better.stdout


def test_same_session_no_change(pair, fxlens):
    diff = diff_paths(str(pair.v1), str(pair.v1))
    assert not diff["worse"] and not diff["better_on"]
    assert all(i["status"] == "same" for k in ("graph_breaks", "functions") for i in diff[k])
    assert diff["guards"] == []  # object ids and guard timings are normalised away
    proc = fxlens("diff", pair.v1, pair.v1)
    assert proc.returncode == 0 and "no count changed" in proc.stdout


def test_report_json_as_baseline(pair, tmp_path, fxlens):
    base = tmp_path / "base.json"
    assert fxlens("report", "--json", base, pair.v1).returncode == 0
    proc = fxlens("diff", "--format", "markdown", base, pair.v2)
    assert proc.returncode == 1
    assert "### Graph breaks" in proc.stdout and "| \\> moved | `model.py:8 -> 10` |" in proc.stdout
    page = tmp_path / "diff.html"
    assert fxlens("diff", "--format", "html", "--out", page, base, pair.v2).returncode == 1
    assert "<td><code>model.py:8 -&gt; 10</code></td>" in page.read_text()


def test_bad_input_is_one_line(pair, tmp_path, fxlens):
    proc = fxlens("diff", pair.v1, tmp_path / "nope")
    assert proc.returncode == 2 and "nope" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    junk = tmp_path / "x.json"
    junk.write_text("[1, 2]")
    proc = fxlens("diff", junk, pair.v1)
    assert proc.returncode == 2 and "not an fxlens report" in proc.stderr


def test_match_prefers_exact_then_moved_in_line_order():
    a = [{"f": "g", "line": 5, "r": "x"}, {"f": "g", "line": 9, "r": "x"}, {"f": "g", "line": 20, "r": "y"}]
    b = [{"f": "g", "line": 9, "r": "x"}, {"f": "g", "line": 7, "r": "x"}, {"f": "h", "line": 1, "r": "y"}]
    pairs = match(a, b, lambda x: (x["f"], x["line"], x["r"]), lambda x: (x["f"], x["r"]))
    got = {(p[0] and p[0]["line"], p[1] and p[1]["line"], p[2]) for p in pairs}
    assert got == {(9, 9, False), (5, 7, True), (20, None, False), (None, 1, False)}


def _report(functions=None, breaks=()):
    events = [{"event": "doctor", "functions": functions}] if functions else []
    return {
        "graphs": [],
        "graph_breaks": list(breaks),
        "recompiles": [],
        "recompile_limit_hits": [],
        "compile_times": {"total_s": 1.0, "per_compile": []},
        "events": events,
        "source": {"script": "/x/train.py"},
    }


def test_doctor_timings_only_when_both_have_them():
    fn = {
        "function": "step",
        "file": "/x/train.py",
        "line": 3,
        "eager_ms": 2.0,
        "compiled_ms": 1.0,
        "speedup": 2.0,
        "compile_s": 3.0,
    }
    assert compare(_report([fn]), _report())["doctor"] is None
    (d,) = compare(_report([fn]), _report([{**fn, "compiled_ms": 4.0, "speedup": 0.5}]))["doctor"]
    assert d["function"] == "step" and d["speedup"] == {"a": 2.0, "b": 0.5}


def test_renamed_script_still_matches():
    brk = {"reason": "r", "file": "/x/before.py", "line": 3, "function": "f", "count": 1, "source": ""}
    a = {**_report(breaks=[brk]), "source": {"script": "/x/before.py"}}
    b = {**_report(breaks=[{**brk, "file": "/y/after.py"}]), "source": {"script": "/y/after.py"}}
    (item,) = compare(a, b)["graph_breaks"]
    assert item["status"] == "same" and item["file"] == "after.py"


def test_text_never_sends_a_terminal_escape():
    brk = {
        "reason": "x\x1b[31mred",
        "file": "/x/train.py",
        "line": 3,
        "function": "f",
        "count": 1,
        "source": "",
    }
    diff = compare(_report(), _report(breaks=[brk]))
    text = render_text(diff)
    assert "\x1b" not in text and "x\\x1b[31mred" in text and diff["worse_on"][:1] == ["graph_breaks"]


def test_doctor_memory_parts_a_to_b_only_when_both_have_them():
    def with_memory(held: int) -> dict:
        r = _report()
        r["events"] = [
            {
                "event": "doctor",
                "peak_memory": {
                    "eager": 100,
                    "compiled": 150 + held,
                    "breakdown": [
                        {"cause": "compiler", "bytes": 50},
                        {"cause": "held_by_compiled_code", "bytes": held},
                    ],
                },
            }
        ]
        return r

    assert compare(with_memory(24), _report())["doctor_memory"] is None
    rows = {r["what"]: (r["a"], r["b"]) for r in compare(with_memory(24), with_memory(4))["doctor_memory"]}
    assert rows["held_by_compiled_code"] == (24, 4) and rows["peak compiled"] == (174, 154)
    assert rows["compiler"] == (50, 50)
