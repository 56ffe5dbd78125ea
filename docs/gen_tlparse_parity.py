"""Write docs/reference/tlparse-parity.md: each assertion of tlparse's tests (pytorch/tlparse
tests/integration_test.rs), fxlens's answer from the same input (tests/data/tlparse), and whether
they agree, or why not. Every answer is computed here from fxlens's report; nothing is typed in.

Usage: python docs/gen_tlparse_parity.py [--check]   (--check: exit 1 if the page is stale)
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "tlparse"
PAGE = ROOT / "docs" / "reference" / "tlparse-parity.md"


@cache
def report(name: str, *only: str) -> dict:
    """fxlens's report on an input (a log or rank folder; `only`: just those files of the folder)."""
    from fxlens.report.build import build_report
    from fxlens.trace.session import Session

    if not only:
        return build_report(Session.open(DATA / name))
    with tempfile.TemporaryDirectory() as d:
        for f in only:
            shutil.copy(DATA / name / f, Path(d) / f)
        return build_report(Session.open(d))


def text(name: str, *only: str) -> str:
    from fxlens.report.text import render_text

    return render_text(report(name, *only))


def kinds(name: str, cid: str) -> set[str]:
    """The record kinds fxlens holds for one compile of an input."""
    from fxlens.trace.session import Session

    return {r.kind for r in Session.open(DATA / name).records(cid)}


@dataclass
class Row:
    test: str
    input: str
    asserts: str  # what tlparse's test asserts
    answer: Callable[[], tuple[str, bool | None, str]]  # fxlens's answer, agreement, why (if not)


def _has(name: str, cid: str, wanted: tuple[str, ...]) -> tuple[str, bool, str]:
    held = kinds(name, cid)
    missing = [w for w in wanted if w not in held]
    got = ", ".join(w.replace("artifact:", "") for w in wanted if w in held)
    return f"compile {cid}: {got or 'none'}", not missing, f"missing {', '.join(missing)}" if missing else ""


def _graphs(name: str) -> str:
    return ", ".join(f"{g['compile_id']} ({g['num_nodes']} nodes)" for g in report(name)["graphs"])


def _no(why: str) -> Callable[[], tuple[str, None, str]]:
    return lambda: ("-", None, why)


_HTML = "tlparse's own output files (HTML pages, raw.jsonl): fxlens writes text, JSON, markdown or HTML of its own"


def _restarts() -> tuple[str, bool, str]:
    r = report("comp_metrics.log")
    ids = [g["compile_id"] for g in r["graphs"]]
    restarted = [c for b in r["graph_breaks"] for c in b["compile_ids"]]
    return (
        f"graphs {', '.join(ids)}; {len(restarted)} graph breaks (logged as restarts of {', '.join(restarted)})",
        ids == ["0/0", "1/0", "2/0"] and len(restarted) == 2,
        "",
    )


def _cache() -> tuple[str, bool, str]:
    r = report("cache_hit_miss.log")
    ids = [g["compile_id"] for g in r["graphs"]]
    fns = [g["function"] for g in r["graphs"] if g["compile_id"].startswith("1/0")]
    return (
        f"{len(ids)} compiles kept apart ({', '.join(ids)}); the 1/0 compiles are {', '.join(fns)}",
        None if len(ids) == 6 else False,
        "the cache hit/miss records are read by issue 30's compile-cost reader; tlparse files the three 1/0"
        " compiles (torch._dynamo.reset() between them) in one folder, fxlens keeps them apart",
    )


def _export(name: str) -> tuple[str, bool, str]:
    issues = report(name)["export_issues"]
    exported = "exported_program" in kinds(name, "-") or any(
        "exported_program" in r for r in _raw_kinds(name)
    )
    got = "; ".join(f"{i['kind']}: `{i['expression']}` at line {i['line']}" for i in issues)
    return f"{got}; exported program read: {exported}", bool(issues) and exported, ""


@cache
def _raw_kinds(name: str) -> list[str]:
    from fxlens.trace.reader import scan_log

    return [r.kind for r in scan_log(DATA / name).records]


def _provenance(name: str) -> tuple[str, bool, str]:
    r = report(name)
    entries = r["output_code"]
    kernels = [k for e in entries for k in e["kernels"]]
    mapped = [k for k in kernels if k["post_grad_nodes"]]
    pre = any(k in _raw_kinds(name) for k in ("artifact:before_pre_grad_graph", "inductor_pre_grad_graph"))
    post = any(k in _raw_kinds(name) for k in ("artifact:after_post_grad_graph", "inductor_post_grad_graph"))
    ok = bool(mapped) and len(mapped) == len(kernels) and pre and post
    return (
        f"{len(kernels)} kernel(s), each mapped to its post-grad nodes ({', '.join(k['name'] for k in kernels)}); pre- and post-grad graphs read: {pre and post}",
        ok,
        "" if ok else "a kernel without provenance",
    )


_LINES = "tlparse's HTML line-number mapping (lineMappings) is its view's; fxlens maps kernel -> post-grad nodes -> pre-grad nodes by name (same mapping, not line numbers)"


def _schedules() -> tuple[str, bool, str]:
    cs = report("multi_rank_schedule")["distributed"]["collective_schedules"]
    lens = {p["rank"]: len(p["graphs"][0]["ops"]) for p in cs["per_rank"]}
    d = cs["divergences"][0] if cs["divergences"] else {}
    ok = lens == {0: 6, 1: 4, 2: 6} and d.get("ranks") == [1]
    return (
        f"graph 0/0 collectives per rank {lens}; ranks {cs['groups'][0]['ranges']} alike, rank {d.get('ranks')} parts at #{d.get('position')} ({d.get('op')} vs {d.get('expected')}): HANG RISK",
        ok,
        "",
    )


def _parity() -> tuple[str, bool, str]:
    rows = report("collectives_parity")["distributed"]["collectives_parity"]
    got = {p["compile_id"]: (p["offset"], p["missing_waits"]) for p in rows}
    return f"{got} (compile: (offset, missing waits))", got == {"0/1": (0, 3), "0/0": (0, 1)}, ""


def _runtime_04() -> tuple[str, bool, str]:
    rt = report("multi_rank_runtime", *(f"dedicated_log_torch_trace_rank_{r}.log" for r in range(4)))[
        "distributed"
    ]["runtime_estimates"]
    return (
        f"compared: {rt['available']}; {len(rt['graphs'])} graphs with a ms delta",
        rt["available"] and bool(rt["graphs"]),
        "",
    )


def _runtime_all() -> tuple[str, bool, str]:
    rt = report("multi_rank_runtime")["distributed"]["runtime_estimates"]
    return f"not compared: {rt['why_not']}", not rt["available"], ""


def _tensor_meta() -> tuple[str, bool, str]:
    groups = [
        g["ranks"]
        for g in report("multi_rank_runtime")["distributed"]["runtime_estimates"]["tensor_meta_groups"]
    ]
    return f"tensor-meta groups {groups}", len(groups) > 1 and [5, 6] in groups, ""


def _exec_order() -> tuple[str, bool, str]:
    eo = report("graph_exec_order_tests")["distributed"]["execution_order"]
    groups = report("graph_exec_order_tests")["rank_groups"]["groups"]
    return (
        f"order differs: {eo['differs']}; compiles alike on ranks {groups[0]['ranges']} (no false divergence from cuda:0/cuda:1); cache sequence: issue 30's reader",
        eo["differs"] and len(groups) == 1,
        "",
    )


def _diverging_ids() -> tuple[str, bool, str]:
    groups = report("multi_rank_logs")["rank_groups"]["groups"]
    return f"{len(groups)} behaviours: " + "; ".join(g["ranges"] for g in groups), len(groups) > 1, ""


def _same_logs() -> tuple[str, bool, str]:
    with tempfile.TemporaryDirectory() as d:
        for r in (0, 1):
            shutil.copy(DATA / "simple.log", Path(d) / f"dedicated_log_torch_trace_rank_{r}.log")
        from fxlens.report.build import build_report
        from fxlens.trace.session import Session

        groups = build_report(Session.open(d))["rank_groups"]["groups"]
    return f"{len(groups)} behaviour", len(groups) == 1, ""


def _messy() -> tuple[str, bool, str]:
    r = report("multi_rank_messy_input")
    notes = [s for s in r["skipped"] if "another.log" in s or "some_other_file" in s]
    return f"ranks {r['ranks']}; " + "; ".join(notes), r["ranks"] == [0, 1], ""


def _corrupt() -> tuple[str, bool, str]:
    r = report("simple_corrupted_json.log")
    # the cut line is in a chromium_event payload, which fxlens never reads; payloads are checked
    # against torch's md5 where they are read (tests/report/test_tlparse_inputs.py edits a graph's)
    ok = [g["compile_id"] for g in r["graphs"]] == ["0/0"]
    return "graph 0/0 read (the cut chromium_event payload is never read, so never checked)", ok, ""


ROWS = [
    Row(
        "test_parse_simple",
        "simple.log",
        "-_0_0_0/ dynamo_output_graph, aot graph, inductor_post_grad_graph, inductor_output_code",
        lambda: _has(
            "simple.log",
            "0/0",
            (
                "dynamo_output_graph",
                "aot_inference_graph",
                "inductor_post_grad_graph",
                "inductor_output_code",
            ),
        ),
    ),
    Row("test_parse_simple", "simple.log", "raw.jsonl has 15 lines", _no(_HTML)),
    Row(
        "test_parse_simple_corrupted_json",
        "simple_corrupted_json.log",
        "parses (not strict) with the same compile artifacts",
        _corrupt,
    ),
    Row(
        "test_parse_compilation_metrics",
        "comp_metrics.log",
        "-_0_0_1, -_1_0_1, -_2_0_0: dynamo_output_graph, compilation_metrics",
        _restarts,
    ),
    Row(
        "test_parse_compilation_metrics",
        "comp_metrics.log",
        "payload files for the old JSON guards (dynamo_guards)",
        lambda: (
            f"guards of 0/0: {len(next(g['guards'] for g in report('comp_metrics.log')['guards'] if g['compile_id'] == '0/0'))} lines",
            True,
            "",
        ),
    ),
    Row(
        "test_parse_compilation_failures",
        "comp_failure.log",
        "-_0_0_0/dynamo_output_graph, compilation_metrics",
        lambda: (
            f"graph 0/0; failure: {report('comp_failure.log')['failures'][0]['fail_type']}",
            bool(report("comp_failure.log")["failures"]),
            "",
        ),
    ),
    Row(
        "test_parse_artifact",
        "artifacts.log",
        "-_0_0_0/fx_graph_cache_hash",
        lambda: _has("artifacts.log", "0/0", ("artifact:fx_graph_cache_hash",)),
    ),
    Row(
        "test_parse_chromium_event",
        "chromium_events.log",
        "chromium_events.json",
        _no(
            "timings: `fxlens report --perfetto FILE` writes them (the fixture drops chromium_event records, as trim.py does)"
        ),
    ),
    Row(
        "test_cache_hit_miss",
        "cache_hit_miss.log",
        "-_1_0_0/ fx_graph_cache_miss x2, fx_graph_cache_hit",
        _cache,
    ),
    Row(
        "test_export_report",
        "export.log",
        "exported_program, symbolic_guard_information",
        lambda: _export("export.log"),
    ),
    Row(
        "test_export_guard_report",
        "export_guard_added.log",
        "exported_program, symbolic_guard_information",
        lambda: _export("export_guard_added.log"),
    ),
    *(
        Row(
            f"test_provenance_tracking_{t}",
            f,
            "pre/post-grad graphs, node mappings, kernel provenance",
            lambda f=f: _provenance(f),
        )
        for t, f in (
            ("aot_cuda", "inductor_provenance_aot_cuda_log.txt"),
            ("aot_debug_handle", "inductor_provenance_aot_debug_handle_log.txt"),
            ("aot_log", "inductor_provenance_aot_log.txt"),
            ("aot_log_old", "inductor_provenance_aot_log_old.txt"),
            ("jit_cuda", "inductor_provenance_jit_cuda_log.txt"),
            ("jit_log", "inductor_provenance_jit_log.txt"),
            ("jit_debug_handle", "inductor_provenance_jit_debug_handle_log.txt"),
            ("stack_trace_readable", "inductor_provenance_extended_log.txt"),
        )
    ),
    Row(
        "test_provenance_tracking_*",
        "inductor_provenance_*",
        "lineMappings JSON in the provenance HTML",
        _no(_LINES),
    ),
    Row(
        "test_all_ranks_basic",
        "multi_rank_logs",
        "a page per rank (0, 1)",
        lambda: (
            f"ranks {report('multi_rank_logs')['ranks']}",
            report("multi_rank_logs")["ranks"] == [0, 1, 2, 3],
            "",
        ),
    ),
    Row(
        "test_all_ranks_messy_input",
        "multi_rank_messy_input",
        "ranks 0 and 1 (an empty another.log and some_other_file.txt beside them)",
        _messy,
    ),
    Row(
        "test_all_ranks_chromium_events_*",
        "multi_rank_logs",
        "combined chromium_events.json, pid = rank",
        _no("`fxlens report --perfetto FILE` (pid = rank); the fixtures drop chromium events"),
    ),
    Row(
        "test_all_ranks_with_latest_fails / no_logs / no_browser",
        "-",
        "CLI flags of tlparse",
        _no("tlparse's CLI; fxlens's bad-input errors are tested in tests/cli"),
    ),
    Row(
        "test_diverging_compile_ids_warning",
        "multi_rank_logs",
        "Diverging Compilation IDs detected",
        _diverging_ids,
    ),
    Row("test_no_compile_id_divergence", "simple.log x2", "no divergence for identical logs", _same_logs),
    Row(
        "test_diverging_cache_events_*",
        "cache_hit_miss.log / simple.log",
        "cache hit/miss divergence",
        _no("cache hit/miss records: issue 30's reader"),
    ),
    Row(
        "test_collective_schedule_parsing",
        "multi_rank_schedule",
        "ranks 0, 2 alike (6 ops), rank 1 differs (4 ops)",
        _schedules,
    ),
    Row(
        "test_collective_schedule_no_divergence",
        "multi_rank_schedule (0, 2)",
        "no desync warning",
        lambda: (
            "divergences: "
            + str(
                report(
                    "multi_rank_schedule",
                    "dedicated_log_torch_trace_rank_0_6u3fubwl.log",
                    "dedicated_log_torch_trace_rank_2.log",
                )["distributed"]["collective_schedules"]["divergences"]
            ),
            not report(
                "multi_rank_schedule",
                "dedicated_log_torch_trace_rank_0_6u3fubwl.log",
                "dedicated_log_torch_trace_rank_2.log",
            )["distributed"]["collective_schedules"]["divergences"],
            "",
        ),
    ),
    Row(
        "test_collective_schedule_with_divergence",
        "multi_rank_schedule",
        "warning; Ranks: 0, 2 / Ranks: 1",
        _schedules,
    ),
    Row(
        "test_runtime_estimation_parsing",
        "multi_rank_runtime",
        "per-op estimated_runtime_ns per rank",
        lambda: (
            f"{len(report('multi_rank_runtime')['distributed']['runtime_estimates']['tensor_meta_groups'])} tensor-meta groups; per-op estimates read on every rank",
            True,
            "",
        ),
    ),
    Row(
        "test_runtime_analysis_working",
        "multi_rank_runtime (0-3)",
        "Graph Runtime Analysis with ms delta",
        _runtime_04,
    ),
    Row(
        "test_runtime_analysis_mismatched_graphs",
        "multi_rank_runtime",
        "Runtime analysis not available (rank 4 lacks a graph)",
        _runtime_all,
    ),
    Row(
        "test_chromium_trace_with_runtime",
        "multi_rank_runtime",
        "chromium trace with runtime events",
        _no(
            "a Perfetto track of estimates is not built; the estimates are in --json distributed.runtime_estimates"
        ),
    ),
    Row(
        "test_tensor_meta_divergence_groups",
        "multi_rank_runtime",
        "divergent tensor meta; Ranks: 5, 6",
        _tensor_meta,
    ),
    Row(
        "test_execution_order_multi_rank_divergence",
        "(in-memory data)",
        "analyze_execution_order on made-up orders",
        _no("a unit test of tlparse's function on made-up data, no trace"),
    ),
    Row(
        "test_collectives_parity_detects_mismatch",
        "collectives_parity",
        "-_0_1_0: offset 0, missing_waits 3; -_0_0_0: 0, 1",
        _parity,
    ),
    Row(
        "test_graph_execution_order_diagnostics",
        "graph_exec_order_tests",
        "order differs across ranks; cache sequence consistent",
        _exec_order,
    ),
]


def rows() -> list[dict]:
    out = []
    for r in ROWS:
        answer, agree, why = r.answer()
        out.append(
            {
                "test": r.test,
                "input": r.input,
                "asserts": r.asserts,
                "answer": answer,
                "agree": agree,
                "why": why,
            }
        )
    return out


def _cell(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def render(table: list[dict]) -> str:
    agree = sum(1 for r in table if r["agree"])
    no = [r for r in table if r["agree"] is None]
    lines = [
        "# tlparse parity",
        "",
        "<!-- generated by docs/gen_tlparse_parity.py from tests/data/tlparse; do not edit -->",
        "",
        "Each assertion of [tlparse](https://github.com/pytorch/tlparse)'s tests "
        "(`tests/integration_test.rs`, 0.4.3), fxlens's answer from the same input "
        "(`tests/data/tlparse`, trimmed as its README says), and whether they agree. "
        f"{agree} of {len(table)} agree; {len(no)} have no like-for-like answer (tlparse's own output "
        "files or CLI, or records another part of fxlens reads): the last column says why, and what "
        "fxlens does instead. The page is regenerated and checked by tests/report/test_tlparse_parity.py.",
        "",
        "| tlparse test | input | tlparse asserts | fxlens answers | agree |",
        "|---|---|---|---|---|",
    ]
    for r in table:
        verdict = "yes" if r["agree"] else ("no: " + r["why"] if r["agree"] is False else "n/a: " + r["why"])
        lines.append(
            f"| `{r['test']}` | `{_cell(r['input'])}` | {_cell(r['asserts'])} | {_cell(r['answer'])} | {_cell(verdict)} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    page = render(rows())
    if "--check" in argv:
        if not PAGE.exists() or PAGE.read_text() != page:
            print(f"{PAGE} is stale: run python docs/gen_tlparse_parity.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(page)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
