"""tlparse's own test inputs (tests/data/tlparse, from pytorch/tlparse, BSD-3), read right.

Each test checks fxlens's answer against what the log itself says, parsed here independently of
fxlens (raw JSON of the records), or against what tlparse's tests assert on the same input.
"""

from __future__ import annotations

import json
import re
import shutil
from functools import cache
from pathlib import Path

from schema_check import validate

from fxlens.report.build import build_report
from fxlens.report.formats import render_markdown
from fxlens.report.ranks import normalise_code
from fxlens.report.text import render_text
from fxlens.trace.session import Session

DATA = Path(__file__).resolve().parents[1] / "data" / "tlparse"
_PREFIX = re.compile(r"^[VIWEC]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [^\]]*\] ")


def raw_records(path: Path) -> list[tuple[dict, str]]:
    """(record, payload) of every record of a log, parsed here without fxlens."""
    out: list[tuple[dict, list[str]]] = []
    for line in path.read_text(errors="replace").split("\n"):
        if line.startswith("\t"):
            if out:
                out[-1][1].append(line[1:])
            continue
        m = _PREFIX.match(line)
        if not m:
            continue
        try:
            out.append((json.loads(line[m.end() :]), []))
        except ValueError:
            out.append(({}, []))
    return [(r, "\n".join(p)) for r, p in out]


@cache
def report_of(name: str) -> dict:
    return build_report(Session.open(DATA / name))


def test_compiles_logged_again_after_a_reset_are_kept_apart():
    """cache_hit_miss.log compiles fn, fn and fn2 (each as 0/0 + 1/0) with torch._dynamo.reset()
    between: 6 compiles, each named as its own dynamo_start says."""
    starts = [
        r["dynamo_start"]["stack"][-1]["name"]
        for r, _ in raw_records(DATA / "cache_hit_miss.log")
        if "dynamo_start" in r
    ]
    graphs = report_of("cache_hit_miss.log")["graphs"]
    assert len(graphs) == len(starts) == 6
    assert [g["compile_id"] for g in graphs] == ["0/0", "1/0", "0/0#2", "1/0#2", "0/0#3", "1/0#3"]
    assert [g["co_name"] for g in graphs] == starts
    assert [g["function"] for g in graphs if g["compile_id"].startswith("1/0")] == ["fn", "fn", "fn2"]


def test_markdown_puts_each_compiles_output_code_under_its_own_heading():
    """The code under "1/0#3 fn2: <file>" is the third 1/0's inductor_output_code record."""
    raw = [
        (r["inductor_output_code"]["filename"].rsplit("/", 1)[-1], re.search(r"AOT ID: \['(\w+)'\]", p)[1])
        for r, p in raw_records(DATA / "cache_hit_miss.log")
        if "inductor_output_code" in r
    ]
    md = render_markdown(report_of("cache_hit_miss.log"), Session.open(DATA / "cache_hit_miss.log"))
    shown = re.findall(r"<summary>(\S+) (\w+): (\S+\.py)</summary>.*?AOT ID: \['(\w+)'\]", md, re.S)
    assert [(f, aot) for _, _, f, aot in shown] == raw
    assert [(cid, fn) for cid, fn, _, _ in shown] == [("1/0", "fn"), ("1/0#2", "fn"), ("1/0#3", "fn2")]


def test_device_index_alone_is_no_rank_divergence():
    """graph_exec_order_tests: two ranks on cuda:0 and cuda:1; tlparse sees no divergence, and
    their output code differs only in the device (checked here on the raw payloads)."""
    logs = sorted((DATA / "graph_exec_order_tests").glob("*.log"))
    codes = [[p for r, p in raw_records(log) if "inductor_output_code" in r] for log in logs]
    assert codes[0] != codes[1] and "cuda:1" in "".join(codes[1])
    assert [normalise_code(c) for c in codes[0]] == [normalise_code(c) for c in codes[1]]
    groups = report_of("graph_exec_order_tests")["rank_groups"]["groups"]
    assert [g["ranks"] for g in groups] == [[0, 1]]
    assert "RANK DIVERGENCE" not in render_text(report_of("graph_exec_order_tests"))


def test_multi_rank_runtime_groups_as_tlparse_does():
    """Ranks 0-4 compile alike; ranks 5 and 6 compiled other code (tlparse: "Ranks: 5, 6")."""
    groups = report_of("multi_rank_runtime")["rank_groups"]["groups"]
    assert [g["ranks"] for g in groups] == [[0, 1, 2, 3, 4], [5, 6]]


def test_empty_and_foreign_files_in_a_rank_folder_are_said_not_ranks():
    report = report_of("multi_rank_messy_input")
    assert report["ranks"] == [0, 1]
    assert "another.log: empty, not counted as a rank" in report["skipped"]
    assert "some_other_file.txt: not a *.log, not read" in report["skipped"]
    assert "RANK DIVERGENCE" not in render_text(report)


def test_a_record_rank_other_than_the_file_names_is_said(tmp_path):
    """multi_rank_schedule's rank-1 log is a copy of rank 0's: its records say rank 0."""
    log = next((DATA / "multi_rank_schedule").glob("*rank_1_*.log"))
    said = {r["rank"] for r, _ in raw_records(log) if "rank" in r}
    assert said == {0}
    report = report_of("multi_rank_schedule")
    assert report["ranks"] == [0, 1, 2]
    assert any(f"{log.name}: file name says rank 1, its records say rank 0" in n for n in report["skipped"])


def test_graph_breaks_an_older_torch_logged_as_restarts_are_counted():
    """comp_metrics.log (torch ~2.3): two breaks, logged only as restarts; the resume functions
    compiled after them name their lines."""
    raw = [
        r["compilation_metrics"]
        for r, _ in raw_records(DATA / "comp_metrics.log")
        if "compilation_metrics" in r
    ]
    restarted = [m for m in raw if m["restart_reasons"]]
    lines = sorted(
        int(m["co_name"].rsplit("_", 1)[1]) for m in raw if m["co_name"].startswith("torch_dynamo_resume")
    )
    breaks = report_of("comp_metrics.log")["graph_breaks"]
    assert len(breaks) == len(restarted) == 2
    assert sorted(b["line"] for b in breaks) == lines == [9551, 9553]
    assert {b["reason"] for b in breaks} == {m["restart_reasons"][0].strip("'") for m in restarted}


def test_placeholders_are_not_ops_and_old_json_guards_render():
    raw = [
        r["compilation_metrics"]
        for r, _ in raw_records(DATA / "comp_metrics.log")
        if "compilation_metrics" in r
    ]
    report = report_of("comp_metrics.log")
    # torch's own count of the graph's ops, in its compilation metrics
    assert [g["num_ops"] for g in report["graphs"]] == [m["graph_op_count"] for m in raw] == [1, 1, 1]
    assert all("L_x_" not in g["ops"] for g in report["graphs"])
    guards = {
        (r["frame_id"], r["frame_compile_id"]): [g["code"] for g in json.loads(p)]
        for r, p in raw_records(DATA / "comp_metrics.log")
        if "dynamo_guards" in r
    }
    got = {g["compile_id"]: g["guards"] for g in report["guards"]}
    assert got["0/0"] == guards[(0, 0)] and len(got["0/0"]) == 3


def test_a_payload_torch_did_not_write_is_noted_where_it_is_read(tmp_path):
    """A payload is checked against torch's md5 (`has_payload`) where fxlens reads it, not while a
    log is scanned: an edited graph payload (read for the report's graphs) is noted with its line;
    simple_corrupted_json.log's cut chromium_event payload, which nothing reads, costs no check."""
    lines = (DATA / "simple.log").read_text().split("\n")
    at = next(i for i, ln in enumerate(lines) if '{"dynamo_output_graph"' in ln)
    lines[at + 3] = lines[at + 3].replace("l_x_ = L_x_", "l_x_ = L_x_  # edited")
    (tmp_path / "edited.log").write_text("\n".join(lines))
    note = [
        n for n in report_of_path(tmp_path / "edited.log")["skipped"] if "differ from what torch logged" in n
    ]
    assert len(note) == 1 and f"line {at + 1} (dynamo_output_graph)" in note[0], note
    for clean_log in ("simple.log", "simple_corrupted_json.log"):
        assert not any("differ from what torch logged" in n for n in report_of(clean_log)["skipped"])


def report_of_path(path: Path) -> dict:
    return build_report(Session.open(path))


def test_collective_ops_are_named(tmp_path):
    text = render_text(report_of("multi_rank_schedule"))
    assert "all_reduce, wait_tensor, all_gather_into_tensor" in text
    assert "default" not in text


def test_fixture_folder_keeps_tlparse_license():
    assert "Redistribution and use in source and binary forms" in (DATA / "LICENSE").read_text()
    assert "pytorch/tlparse" in (DATA / "README.md").read_text()


def _artifacts(log: Path, name: str) -> list[tuple[dict, str]]:
    return [(r, p) for r, p in raw_records(log) if (r.get("artifact") or {}).get("name") == name]


def test_collective_schedules_compared_across_ranks_name_the_hang():
    """tlparse: ranks 0 and 2 issue the same 6 collectives in graph 0/0, rank 1 other 4."""
    logs = {int(re.search(r"rank_(\d+)", p.name)[1]): p for p in (DATA / "multi_rank_schedule").glob("*.log")}
    ops = {r: json.loads(_artifacts(p, "inductor_collective_schedule")[0][1]) for r, p in logs.items()}
    assert ops[0] == ops[2] != ops[1] and (len(ops[0]), len(ops[1])) == (6, 4)
    k = next(i for i, (a, b) in enumerate(zip(ops[1], ops[0])) if a != b)
    report = report_of("multi_rank_schedule")
    cs = report["distributed"]["collective_schedules"]
    assert [g["ranks"] for g in cs["groups"]] == [[0, 2], [1]]
    (d,) = cs["divergences"]
    assert (d["ranks"], d["compile_id"], d["position"]) == ([1], "0/0", k + 1)
    assert (d["op"], d["expected"]) == (ops[1][k].split(".")[3], ops[0][k].split(".")[3])
    text = render_text(report)
    assert "HANG RISK: rank 1 issues wait_tensor where ranks 0, 2 issue reduce_scatter_tensor" in text
    assert "in compile 0/0" in text


def test_identical_schedules_are_no_hang_risk(tmp_path):
    """tlparse: ranks 0 and 2 alone have identical schedules, no desync warning."""
    for p in (DATA / "multi_rank_schedule").glob("*.log"):
        if "rank_1" not in p.name:
            shutil.copy(p, tmp_path / p.name)
    report = build_report(Session.open(tmp_path))
    assert report["distributed"]["collective_schedules"]["divergences"] == []
    assert "HANG RISK" not in render_text(report)


def test_collectives_parity_counts_missing_waits_as_tlparse():
    """tlparse: graph 0/1 is missing 3 waits, 0/0 one; no offset; no other graph listed."""
    rows = report_of("collectives_parity")["distributed"]["collectives_parity"]
    got = {r["compile_id"]: (r["offset"], r["missing_waits"]) for r in rows}
    assert got == {"0/1": (0, 3), "0/0": (0, 1)}
    assert "compile 0/1: 3 collective(s) never waited on" in render_text(report_of("collectives_parity"))


def test_runtime_estimates_compared_when_ranks_estimated_the_same_graphs(tmp_path):
    """tlparse: ranks 0-3 give a runtime analysis with deltas; with rank 4 (a graph short) none."""
    whole = report_of("multi_rank_runtime")["distributed"]["runtime_estimates"]
    assert not whole["available"] and "rank 4: 3" in whole["why_not"]
    assert [5, 6] in [g["ranks"] for g in whole["tensor_meta_groups"]]  # tlparse: "Ranks: 5, 6"
    for r in range(4):
        src = DATA / "multi_rank_runtime" / f"dedicated_log_torch_trace_rank_{r}.log"
        shutil.copy(src, tmp_path / src.name)
    rt = build_report(Session.open(tmp_path))["distributed"]["runtime_estimates"]
    assert rt["available"] and len(rt["graphs"]) == 4
    # the estimate is the sum of inductor's per-op estimates, as logged (checked on rank 0's raw log)
    raw = json.loads(
        _artifacts(tmp_path / "dedicated_log_torch_trace_rank_0.log", "inductor_runtime_and_tensor_meta")[0][
            1
        ]
    )
    total = sum(o["estimated_runtime_ns"] for o in raw["ops"]) / 1e6
    assert abs(rt["graphs"][0]["ms"]["0"] - total) < 1e-3
    assert "ms delta" in render_text(build_report(Session.open(tmp_path)))


def test_graph_execution_order_differs_across_ranks():
    orders = {
        p.name: [
            x["compile_id"]
            for x in json.loads(_artifacts(p, "graph_execution")[0][1])["graph_execution_order"]
        ]
        for p in (DATA / "graph_exec_order_tests").glob("*.log")
    }
    a, b = orders.values()
    assert a != b  # the ground truth: the two ranks ran their graphs in another order
    eo = report_of("graph_exec_order_tests")["distributed"]["execution_order"]
    assert eo["differs"] and [x["order"] for x in eo["per_rank"]] == list(orders.values())
    assert "order differs across ranks" in render_text(report_of("graph_exec_order_tests"))


def test_draft_export_issues_as_tlparse_export_shows_them():
    (dd,) = report_of("export.log")["export_issues"]
    raw = next(r for r, _ in raw_records(DATA / "export.log") if "propagate_real_tensors_provenance" in r)
    body = raw["propagate_real_tensors_provenance"]
    assert (dd["kind"], dd["expression"], dd["result"]) == ("data-dependent", body["expr"], body["result"])
    assert (dd["line"], dd["code"]) == (body["user_stack"][-1]["line"], body["user_stack"][-1]["loc"])
    assert dd["fix"].startswith(f"torch._check(not ({body['expr']}))")
    (g,) = report_of("export_guard_added.log")["export_issues"]
    assert (g["kind"], g["expression"], g["code"]) == (
        "guard evaluated",
        "Eq(s0, 3)",
        "assert a.shape[0] == 3",
    )
    text = render_text(report_of("export.log"))
    assert "No graphs were compiled" not in text and "Export issues" in text


def test_aot_inductor_compile_is_not_no_graph_and_lists_extern_kernels():
    report = report_of("inductor_provenance_aot_log.txt")
    assert not any(h["kind"] == "no_graph" for h in report["headlines"])
    (entry,) = report["output_code"]
    mapping = json.loads(
        _artifacts(DATA / "inductor_provenance_aot_log.txt", "inductor_provenance_tracking_node_mappings")[0][
            1
        ]
    )
    assert {k["name"] for k in entry["kernels"]} == set(mapping["cppCodeToPost"])
    assert entry["file"].endswith(".wrapper.cpp") and entry["function"] == "AOTInductor"
    jit = report_of("inductor_provenance_jit_log.txt")["output_code"][0]
    assert "extern_kernels.addmm" in {k["name"] for k in jit["kernels"]}


def test_every_record_kind_of_the_inputs_has_a_reader(tmp_path):
    """No record of tlparse's inputs is of an unknown kind; a made-up one is counted and listed."""
    for name in sorted(p.name for p in DATA.iterdir() if p.name not in ("LICENSE", "README.md")):
        assert report_of(name)["unknown_records"] == [], name
        validate("report", report_of(name))  # and every report keeps the published schema
    log = tmp_path / "odd.log"
    text = (DATA / "comp_failure.log").read_text()
    log.write_text(
        text
        + 'V0101 00:00:00.000000 1 x.py:1] {"brand_new_record": {}, "frame_id": 0, "frame_compile_id": 0}\n'
    )
    report = build_report(Session.open(log))
    assert report["unknown_records"] == [{"kind": "brand_new_record", "count": 1, "ranks": [None]}]
    assert "Records of kinds fxlens does not read" in render_text(report)


def test_a_rerun_after_reset_keeps_its_recompiles_apart(tmp_path):
    """The same program run twice in one log (what torch._dynamo.reset() and a re-run write): the
    second run's recompile reasons, logged just before their compile starts, belong to it."""
    one = (DATA.parent / "traces" / "2.13.0" / "dedicated_log_torch_trace.log").read_text()
    (tmp_path / "twice.log").write_text(one + one)
    single = build_report(Session.open(DATA.parent / "traces" / "2.13.0"))
    twice = build_report(Session.open(tmp_path / "twice.log"))
    first = [r["compile_id"] for r in single["recompiles"]]
    assert [r["compile_id"] for r in twice["recompiles"]] == first + [f"{c}#2" for c in first]
    assert [r["failed_guards"] for r in twice["recompiles"]] == [
        r["failed_guards"] for r in single["recompiles"]
    ] * 2
    assert len(twice["graphs"]) == 2 * len(single["graphs"])
