"""tlparse's own test inputs (tests/data/tlparse, from pytorch/tlparse, BSD-3), read right.

Each test checks fxlens's answer against what the log itself says, parsed here independently of
fxlens (raw JSON of the records), or against what tlparse's tests assert on the same input.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

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


def test_a_payload_torch_did_not_write_is_noted():
    """simple_corrupted_json.log is simple.log with one line of a chromium_event payload cut."""
    note = [
        n for n in report_of("simple_corrupted_json.log")["skipped"] if "differ from what torch logged" in n
    ]
    assert len(note) == 1 and "line 13 (chromium_event)" in note[0]
    assert not any("differ from what torch logged" in n for n in report_of("simple.log")["skipped"])


def test_collective_ops_are_named(tmp_path):
    text = render_text(report_of("multi_rank_schedule"))
    assert "all_reduce, wait_tensor, all_gather_into_tensor" in text
    assert "default" not in text


def test_fixture_folder_keeps_tlparse_license():
    assert "Redistribution and use in source and binary forms" in (DATA / "LICENSE").read_text()
    assert "pytorch/tlparse" in (DATA / "README.md").read_text()
