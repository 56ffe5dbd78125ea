"""`fxlens run` on real scripts: graph breaks and recompiles at their exact user lines."""

import os
import re
import subprocess
import sys
from pathlib import Path

from capture_helpers import SCRIPTS

BREAKS = str(SCRIPTS / "breaks.py")
RECOMPILES = str(SCRIPTS / "recompiles.py")


def _by_line(report):
    return {b["line"]: b for b in report["graph_breaks"] if b["file"] == BREAKS}


def test_every_break_at_its_exact_line(run_report):
    proc, report = run_report("breaks")
    assert proc.returncode == 0, proc.stderr[-2000:]
    breaks = _by_line(report)
    expected = {
        20: ("forward", "Failed to trace builtin operator"),  # print
        21: ("forward", "Data-dependent branching"),
        23: ("forward", "Tensor.item()"),
        24: ("forward", "Tensor.tolist()"),
        9: ("helper", "torch._dynamo.graph_break()"),
        27: ("forward", "function marked as skipped"),  # zlib.crc32, a C extension
    }
    assert set(breaks) == set(expected)
    for line, (function, reason) in expected.items():
        assert breaks[line]["function"] == function
        assert reason in breaks[line]["reason"]
        assert breaks[line]["source"] == Path(BREAKS).read_text().splitlines()[line - 1].strip()


def test_breaks_are_deduplicated_with_counts_and_explained(run_report):
    _, report = run_report("breaks")
    keys = [(b["file"], b["line"], b["reason"]) for b in report["graph_breaks"]]
    assert len(keys) == len(set(keys))
    breaks = _by_line(report)
    # the helper's break is hit inlined into forward's resume function and again when helper compiles alone
    assert breaks[9]["count"] == 2
    # .tolist() is hit on both calls: the second recompiles the resume function (a specialised float)
    assert breaks[24]["count"] == 2
    assert breaks[21]["explanation"].startswith("Detected data-dependent branching")
    assert any("torch.cond" in h for h in breaks[21]["hints"])
    assert any("capture_scalar_outputs" in h for h in breaks[23]["hints"])
    assert all(b["url"].startswith("https://") for b in report["graph_breaks"])


def test_break_in_helper_has_call_path_from_compiled_entry(run_report):
    _, report = run_report("breaks")
    path = _by_line(report)[9]["call_path"]
    assert [(f["function"], f["line"]) for f in path] == [("forward", 25), ("helper", 9)]


def test_resume_functions_map_back_to_forward(run_report):
    _, report = run_report("breaks")
    resumed = [g for g in report["graphs"] if g["co_name"].startswith("torch_dynamo_resume_in_forward")]
    assert resumed and all(g["function"] == "forward" and g["line"] == 18 for g in resumed)
    assert {r["function"] for r in report["recompiles"]} == {"forward"}
    assert all(r["co_name"].startswith("torch_dynamo_resume_in_forward_at_") for r in report["recompiles"])


def test_graphs_have_ops_and_node_counts(run_report):
    _, report = run_report("breaks")
    first = next(g for g in report["graphs"] if g["compile_id"] == "0/0")
    assert first["function"] == "forward" and first["file"] == BREAKS
    assert first["ops"] == ["torch._C._nn.linear"] and first["num_ops"] == 1
    assert first["num_nodes"] == 5  # 3 placeholders (weight, bias, x), linear, output


def _cause(report, kind, function):
    return [c for c in report["recompile_causes"] if c["kind"] == kind and c["function"] == function]


def test_recompiles_root_caused_per_kind(run_report):
    proc, report = run_report("recompiles")
    assert proc.returncode == 0, proc.stderr[-2000:]
    (size,) = _cause(report, "size", "forward")
    # the last batch of a drop_last=False loader (10 samples, batch 4), then back to 4 for eval
    assert size["values"] == ["4", "2"] and size["subject"] == "input `x`, dim 0"
    assert "mark_dynamic" in size["fix"] and "drop_last=True" in size["fix"]
    (train,) = _cause(report, "training", "forward")
    assert train["values"] == ["train", "eval"] and "self.drop" in train["subject"]
    (flag,) = _cause(report, "global", "forward")
    assert flag["subject"] == "global `USE_BIAS`"
    (dtype,) = _cause(report, "dtype", "scale")
    assert dtype["message"] == "dtype of `x` took float32, float64"
    (grad,) = _cause(report, "requires_grad", "scale")
    assert grad["values"] == ["False", "True"]
    for c in report["recompile_causes"]:
        assert c["file"] == RECOMPILES and c["line"] == {"forward": 14, "scale": 19}[c["function"]]
        assert c["count"] == 1


def test_recompiles_list_failed_guards(run_report):
    _, report = run_report("recompiles")
    by_id = {r["compile_id"]: r for r in report["recompiles"]}
    assert by_id["0/1"]["failed_guards"] == ["0/0: tensor 'x' size mismatch at index 0. expected 4, actual 2"]
    assert by_id["0/3"]["failed_guards"][0] == "0/2: G['USE_BIAS'] == True"
    assert by_id["1/1"]["function"] == "scale" and by_id["1/1"]["line"] == 19


def test_storm_across_resume_functions_is_one_cause(run_report):
    _, report = run_report("storm")
    assert len(report["recompiles"]) == 4  # forward and its resume function, twice each
    (cause,) = report["recompile_causes"]
    assert cause["function"] == "forward" and cause["line"] == 8 and cause["count"] == 4
    assert cause["message"].startswith("input `x`, dim 0 took values 8, 5, 3")


def test_recompile_limit_hit_reported(run_report):
    proc, report = run_report("limit")
    assert proc.returncode == 0
    (hit,) = report["recompile_limit_hits"]
    assert (hit["function"], hit["line"], hit["limit"]) == ("step", 9, 3)
    assert hit["file"] == str(SCRIPTS / "limit.py")
    (cause,) = report["recompile_causes"]
    assert cause["values"] == ["0", "1", "2"] and "runs eagerly" in cause["fix"]
    assert "run EAGERLY" in proc.stdout


def test_guards_and_compile_times_per_compile_id(run_report):
    _, report = run_report("recompiles")
    guards = {g["compile_id"]: g["guards"] for g in report["guards"]}
    assert any("TENSOR_MATCH" in line for line in guards["0/0"])
    per = report["compile_times"]["per_compile"]
    assert {m["compile_id"] for m in per} >= {"0/0", "0/1", "0/2", "0/3", "1/0", "1/1", "1/2"}
    assert report["compile_times"]["total_s"] > 0


def test_text_report_tables(run_report):
    proc, _ = run_report("recompiles")
    out = proc.stdout
    assert "Recompiles, by root cause:" in out
    assert "input `x`, dim 0 took values 4, 2" in out
    assert "session: " in out and "fxlens tui " in out


def test_old_optimize_api_is_captured_without_importing_dynamo_early(run_report, sessions_root):
    # the runner wraps torch._dynamo.optimize only once the script imports it (0.9 s a script that
    # never compiles should not pay); the call is then recorded like torch.compile's
    proc, report = run_report("old_api")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "dynamo imported before the script asked: False" in proc.stdout
    assert [(g["function"], g["line"]) for g in report["graphs"]] == [("f", 11)]
    calls = [e for e in report["events"] if e["event"] == "compile_call"]
    assert [(c["api"], c["backend"], c["line"]) for c in calls] == [("torch._dynamo.optimize", "eager", 15)]


def test_a_stack_value_from_a_call_is_not_a_tensor_read(run_report):
    # issue 34: every `___stackN == v` read as "a Python number read from a tensor" with an .item() fix
    script = SCRIPTS / "forked_pid.py"
    torch_says = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        env={**os.environ, "TORCH_LOGS": "recompiles"},
    ).stderr
    assert re.search(r"___stack\d+ == \d+ ", torch_says)  # ground truth: torch guarded a stack value
    proc, report = run_report("forked_pid")
    assert proc.returncode == 0, proc.stderr[-2000:]
    (cause,) = report["recompile_causes"]
    assert cause["kind"] == "stack_value" and cause["line"] == 12
    assert "os.getpid()" in cause["message"] and "read from a tensor" not in cause["message"]
    assert "outside the compiled function" in cause["fix"] and ".item()" not in cause["fix"]


def test_module_int_attribute_through_a_global_and_a_torch_func_graph(run_report):
    # issue 34: the recompile read as "global `m`" (pass it as an argument), the torch.func graph
    # was placed at torch's own wrapper, not the user's line
    proc, report = run_report("module_int_and_func")
    assert proc.returncode == 0, proc.stderr[-2000:]
    (cause,) = report["recompile_causes"]
    # ground truth: torch's own HINT on the failed guard (kept in the JSON)
    assert "integer attributes of the nn.Module" in cause["hint"] and cause["guard"].startswith("G['m'].k")
    assert cause["kind"] == "module_attr" and "`m.k`" in cause["subject"] and "global" not in cause["subject"]
    assert "buffer" in cause["fix"] and "argument" not in cause["fix"]
    src = (SCRIPTS / "module_int_and_func.py").read_text().splitlines()
    func = [g for g in report["graphs"] if g["function"] == "loss"]
    assert len(func) == 1 and "torch" not in func[0]["file"]
    assert src[func[0]["line"] - 1].strip().startswith("return (x @ w).sin().sum()")


def test_a_compiled_generator_is_refused_not_never_called(run_report):
    script = SCRIPTS / "compiled_generator.py"
    # ground truth: torch's own log says it refused to trace the generator
    torch_says = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        env={**os.environ, "TORCH_LOGS": "dynamo"},
    ).stderr
    assert "Attempt to trace generator" in torch_says
    proc, report = run_report("compiled_generator")
    assert proc.returncode == 0, proc.stderr[-2000:]
    (head,) = [h for h in report["headlines"] if h["kind"] == "no_graph"]
    assert "`steps` is a generator function" in head["message"] and "never called" not in head["message"]
    assert "non-generator function" in head["fix"]
