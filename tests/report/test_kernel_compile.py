"""inductor's kernel compile seconds by kernel (fxlens.report.kernelcompile), on torch's own traces.

Ground truth, read from the raw logs here: the kernels the compile's output code defines
(`NAME = async_compile.triton('NAME', ...)`) and torch's wall time of the compile's Triton compiles
(compilation_metrics' `triton_compile_time_us`), a measure apart from the per-kernel times.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from fxlens.report.build import build_report
from fxlens.report.document import text_lines
from fxlens.report.kernelcompile import NOT_LOGGED, kernel_compile_section
from fxlens.trace.session import Session

DATA = Path(__file__).parents[1] / "data"
JIT = DATA / "tlparse" / "inductor_provenance_jit_debug_handle_log.txt"
RANKS = DATA / "tlparse" / "graph_exec_order_tests"


def _triton_total_s(log: Path) -> dict[str, float]:
    out = {}
    for line in open(log, encoding="utf-8", errors="replace"):
        if '"compilation_metrics"' in line:
            m = json.loads(line[line.index("] ") + 2 :])["compilation_metrics"]
            if m.get("triton_compile_time_us"):
                out[m["compile_id"]] = m["triton_compile_time_us"] / 1e6
    return out


def test_each_triton_kernel_of_the_output_code_gets_its_compile_seconds():
    report = build_report(Session.open(JIT))
    sec = report["kernel_compile"]
    assert sec["available"]
    (row,) = sec["per_compile"]
    text = JIT.read_text(errors="replace")
    defined = set(re.findall(r"(\w+) = async_compile\.triton\('\1'", text))
    assert defined and {k["name"] for k in row["kernels"]} == defined
    # the kernels' seconds add up to torch's wall time of the compile's Triton compiles
    total = _triton_total_s(JIT)[row["compile_id"]]
    assert row["triton_compile_s"] == total
    assert abs(row["kernels_s"] - total) <= 0.05 * total
    # each kernel's fused nodes, and the source lines they came from (torch's provenance stacks)
    gelu = next(k for k in row["kernels"] if k["name"] == "triton_poi_fused_addmm_gelu_2")
    assert "erf" in gelu["post_grad_nodes"] and any(
        ln.endswith("test_provenance_tracing.py:84") for ln in gelu["lines"]
    )
    lines = text_lines(kernel_compile_section(report))
    assert lines[0].startswith("inductor's kernel compile seconds, by kernel")
    assert any("triton_poi_fused_addmm_gelu_2" in ln and f"{gelu['seconds']:.3f}" in ln for ln in lines)


def test_every_rank_has_its_own_kernels():
    report = build_report(Session.open(RANKS))
    rows = report["kernel_compile"]["per_compile"]
    for rank, log in enumerate(sorted(RANKS.glob("*rank_*.log"))):
        mine = [r for r in rows if r["rank"] == rank]
        text = log.read_text(errors="replace")
        assert {k["name"] for r in mine for k in r["kernels"]} == set(
            re.findall(r"(\w+) = async_compile\.triton\('\1'", text)
        )
        totals = _triton_total_s(log)
        assert sorted(r["compile_id"] for r in mine) == sorted(totals)
        for r in mine:
            assert r["triton_compile_s"] == totals[r["compile_id"]]
            assert abs(r["kernels_s"] - r["triton_compile_s"]) <= 0.05 * r["triton_compile_s"]


def test_a_cpu_compile_says_torch_logs_no_seconds_per_kernel():
    # torch 2.13's C++ kernels: compile_file events with no kernel name; the section says so
    report = build_report(Session.open(DATA / "inductor" / "fused.log.gz"))
    assert report["output_code"] and any(
        k["name"].startswith("cpp_fused") for e in report["output_code"] for k in e["kernels"]
    )
    assert report["kernel_compile"] == {"available": False, "note": NOT_LOGGED}
    assert kernel_compile_section(report) == []
