"""torch's `subgraph_name` envelope field (regional inductor): a record of one subgraph of a compile.
tlparse 0.4.8 files such artifacts under their subgraph (its tests/inputs/subgraph_name.log, copied
here); fxlens keeps the name on the record and the TUI lists a compile's artifacts grouped by it."""

from __future__ import annotations

import json
from pathlib import Path

from fxlens.trace.reader import scan_log
from fxlens.trace.session import Session
from fxlens.tui.loader import load_ranks

LOG = Path(__file__).resolve().parents[1] / "data" / "tlparse" / "subgraph_name.log"


def _artifacts(path: Path) -> list[tuple[str, str]]:
    (rank,) = load_ranks(Session.open(path))
    (compile_,) = [c for f in rank.frames for c in f.compiles]
    return [(label, rec.payload()) for label, rec in compile_.artifacts()]


def test_each_record_keeps_the_subgraph_torch_logged():
    logged = [json.loads(ln.split("] ", 1)[1]) for ln in LOG.read_text().split("\n") if "] {" in ln]
    scan = scan_log(LOG)
    assert [r.subgraph for r in scan.records] == [m.get("subgraph_name", "") for m in logged]
    assert [r.kind for r in scan.records] == [f"artifact:{m['artifact']['name']}" for m in logged]
    assert scan.bad == [] and scan.notes == []  # the payloads hash to the md5s logged


def test_the_tui_groups_a_compile_s_artifacts_by_subgraph():
    assert _artifacts(LOG) == [
        ("dynamo_output_graph", "test payload no subgraph"),
        ("repeated_subgraph0: fx_graph_runnable", "test payload subgraph A"),
        ("partitioned_bw_subgraph_1_0: fx_graph_runnable", "test payload subgraph B"),
    ]


def test_interleaved_subgraphs_are_grouped_the_compile_s_own_first(tmp_path):
    # the same records logged as A, B, the compile's own, A again (the key first, or after it)
    head, a, b = (ln for ln in LOG.read_text().split("\n") if "] {" in ln)
    pay = dict(
        zip(
            (head, a, b),
            ("\ttest payload no subgraph", "\ttest payload subgraph A", "\ttest payload subgraph B"),
        )
    )
    a2 = a.replace('{"artifact"', '{"subgraph_name": "repeated_subgraph0", "artifact"', 1).replace(
        ', "subgraph_name": "repeated_subgraph0"', "", 1
    )
    log = tmp_path / "interleaved.log"
    log.write_text("\n".join([a, pay[a], b, pay[b], head, pay[head], a2, pay[a], ""]))
    assert [label for label, _ in _artifacts(log)] == [
        "dynamo_output_graph",
        "repeated_subgraph0: fx_graph_runnable",
        "repeated_subgraph0: fx_graph_runnable",
        "partitioned_bw_subgraph_1_0: fx_graph_runnable",
    ]
