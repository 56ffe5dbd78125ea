"""tlparse's views in the TUI, on real traces: shape specialisations (Recompiles view) and a
compile's cache outcome and restart reason in full (Metrics view)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tui_helpers import make_app, press, wait_loaded

from fxlens.tui.lazy_table import VimTable
from fxlens.tui.widgets import Info

pytestmark = pytest.mark.tui
SCRIPTS = Path(__file__).resolve().parents[1] / "report" / "scripts"


def _trace(script: str, *args: str):
    def build(d: Path) -> None:
        env = {**os.environ, "TORCH_TRACE": str(d / "trace")}
        proc = subprocess.run(
            [sys.executable, str(SCRIPTS / script), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]

    return build


async def test_specialization_row_and_detail(build_once, tmp_path):
    trace = build_once("specialize", _trace("specialize.py")) / "trace"
    app = make_app(trace, tmp_path)
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_loaded(app, pilot)
        await press(pilot, "4")
        rows = app.query_one("#recompiles-table", VimTable)._rows_plain()
        (spec,) = [r for r in rows if r[0] == "spec"]
        assert spec[1] == "f" and spec[3].startswith("specialised L['x'].size()[0] = 8")
        detail = app.query_one("#recompiles-detail", Info).plain
        assert "guards it added" in detail and "Eq(s" in detail
        assert "specialize.py:8 in f: if x.shape[0] == 8:" in detail


async def test_metrics_detail_has_cache_and_whole_restart_reason(build_once, tmp_path):
    trace = build_once("compile-stages", _trace("compile_stages.py", "aot_eager")) / "trace"
    app = make_app(trace, tmp_path)
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_loaded(app, pilot)
        await press(pilot, "7")
        detail = app.query_one("#metrics-detail", Info).plain
        assert "cache: no cache lookup in this trace" in detail  # aot_eager uses none
        assert "restarted (Dynamo analysed the frame again):" in detail
        assert "Explanation: Dynamo does not know how to trace builtin operator `print`" in detail


# -- the stack trie, inductor's output code, per-compile cache (the views 0, c and 7) ---------------

from fxlens.tui.screens import TextScreen  # noqa: E402


def _records(log: Path):
    """(record, payload) of every record of a log, parsed here (not by fxlens)."""
    lines = log.read_text().split("\n")
    for i, line in enumerate(lines):
        if "] {" in line and not line.startswith("\t"):
            payload = []
            for nxt in lines[i + 1 :]:
                if not nxt.startswith("\t"):
                    break
                payload.append(nxt[1:])
            yield json.loads(line[line.index("] {") + 2 :]), "\n".join(payload)


async def test_stack_trie_view_rows_and_open(job_16, tmp_path):
    log9 = next(job_16.glob("*_rank_9_*.log"))
    stacks = {
        f"{r['frame_id']}/{r['frame_compile_id']}": r["dynamo_start"]["stack"]
        for r, _ in _records(log9)
        if "dynamo_start" in r
    }
    assert set(stacks) == {"0/0", "0/1"} and stacks["0/0"] == stacks["0/1"]
    app = make_app(job_16, tmp_path)
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_loaded(app, pilot)
        await press(pilot, "0")
        assert app.screen.current_view == "trie"
        rows = app.query_one("#trie-table", VimTable)._rows_plain()
        # one row per user frame of the entry stack (file names interned by "str" records),
        # indented under its caller, the line as logged
        names = {r["str"][1]: r["str"][0] for r, _ in _records(log9) if "str" in r}
        user = [f for f in stacks["0/0"] if names[f["filename"]].endswith("record_gloo.py")]
        assert len(user) == 3
        assert [r[0] for r in rows] == [
            f"{'  ' * i}{f['name']}  record_gloo.py:{f['line']}" for i, f in enumerate(user)
        ]
        leaf = rows[-1]
        assert leaf[1:] == ["0/0, 0/1", "recompile", "0-15"]
        await press(pilot, "v", "G")
        detail = app.query_one("#trie-detail", Info).plain
        assert "0/0  ok  on ranks 0-15" in detail and "0/1  recompile  on rank 9" in detail
        await press(pilot, "o")  # the frame's first compile, in the graph view
        assert app.screen.current_view == "graph"
        assert app.screen.view("graph").params["compile_id"] == "0/0"


async def test_output_code_view_with_provenance(inductor_16, tmp_path):
    recs = list(_records(next(inductor_16.glob("*_rank_0_*.log"))))
    (code,) = [p for r, p in recs if "inductor_output_code" in r]
    (kernel,) = re.findall(r"^(\w+) = async_compile\.", code, flags=re.M)
    (mapping,) = [
        json.loads(p)
        for r, p in recs
        if r.get("artifact", {}).get("name") == "inductor_provenance_tracking_node_mappings"
    ]
    post = sorted(
        {n for k, nodes in mapping["cppCodeToPost"].items() if k.split(":")[0] == kernel for n in nodes}
    )
    app = make_app(inductor_16, tmp_path)
    async with app.run_test(size=(200, 50)) as pilot:
        await wait_loaded(app, pilot)
        await press(pilot, "c")
        assert app.screen.current_view == "output"
        rows = app.query_one("#output-table", VimTable)._rows_plain()
        # the same kernel on every rank, but rank 9's file differs: two rows, told apart by ranks
        assert [(r[0], r[1], r[2]) for r in rows] == [("0/0", kernel, "0-8, 10-15"), ("0/0", kernel, "9")]
        assert sorted(rows[0][3].split(", ")) == post and "inductor_case.py:6" in rows[0][4]
        detail = app.query_one("#output-detail", Info).plain
        assert "generated code (" in detail and code.strip().split("\n")[-1] in detail
        assert "pre-grad nodes:" in detail and "post-grad nodes: " in detail


async def test_metrics_view_shows_cache_outcome(inductor_16, tmp_path):
    log = next(inductor_16.glob("*_rank_0_*.log"))
    (m,) = [r["compilation_metrics"] for r, _ in _records(log) if "compilation_metrics" in r]
    hits = sum(v for k, v in m.items() if k.endswith("_cache_hit_count") and isinstance(v, int))
    misses = sum(v for k, v in m.items() if k.endswith("_cache_miss_count") and isinstance(v, int))
    assert misses and not hits  # a cold cache when recorded
    app = make_app(inductor_16, tmp_path)
    async with app.run_test(size=(200, 50)) as pilot:
        await wait_loaded(app, pilot)
        await press(pilot, "7")
        table = app.query_one("#metrics-table", VimTable)
        col = list(table.columns).index("cache")
        ids = list(table.columns).index("compile id")
        # every compile's row (the compile-time headline rows at the end have no cache cell)
        assert {r[col] for r in table._rows_plain() if "/" in r[ids]} == {"miss"}
        assert "cache: fx_graph miss" in app.query_one("#metrics-detail", Info).plain


async def test_help_lists_the_new_views(job_16, tmp_path):
    app = make_app(job_16, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(app, pilot)
        await press(pilot, "question_mark")
        assert isinstance(app.screen, TextScreen)
        text = app.screen.plain
        assert re.search(r"\b0\s+stack trie view", text) and re.search(
            r"\bc\s+inductor output code view", text
        )
        assert re.search(r"\bo\s+open the frame's first compile in the graph view", text)


async def test_perfetto_key_writes_every_ranks_timeline(job_16, tmp_path):
    # `P` writes what `fxlens report --perfetto` writes: torch's chromium_event records of every
    # rank, one process per rank; counted here straight from the logs
    logs = sorted(job_16.glob("*.log"))
    per_rank = {}
    for log in logs:
        rank = int(re.search(r"rank_(\d+)", log.name)[1])
        per_rank[rank] = sum(
            1 for ln in log.read_text(errors="replace").splitlines() if '{"chromium_event"' in ln
        )
    assert len(per_rank) == 16 and all(per_rank.values())
    app = make_app(job_16, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(app, pilot)
        await press(pilot, "P")
        out = tmp_path / "exports" / "fxlens-perfetto.json"
        for _ in range(200):
            if app.screen.last_export == out:
                break
            await pilot.pause(0.05)
        assert app.screen.last_export == out, "the perfetto trace was not written"
    events = json.loads(out.read_text())["traceEvents"]
    got = {}
    for ev in events:
        if ev.get("ph") != "M":
            got[ev["pid"]] = got.get(ev["pid"], 0) + 1
    assert got == per_rank
    names = {ev["pid"]: ev["args"]["name"] for ev in events if ev.get("ph") == "M"}
    assert names == {r: f"rank {r}" for r in per_rank}


async def _metrics_table(app, pilot) -> tuple[VimTable, list]:
    """The Metrics view (7) once the session is loaded: its table and column names."""
    await wait_loaded(app, pilot)
    await press(pilot, "7")
    table = app.query_one("#metrics-table", VimTable)
    return table, list(table.columns)


async def test_metrics_view_shows_a_cache_hit_from_torchs_artifacts(tmp_path):
    # tlparse's multi_rank_logs: rank 1's compile 0/0 logged fx_graph_cache_hit and
    # aotautograd_cache_hit artifacts (its metrics' hit counters are null): the cell and the detail
    # say hit, with what the hit saved as torch logged it
    data = Path(__file__).resolve().parents[1] / "data" / "tlparse" / "multi_rank_logs"
    log = data / "dedicated_log_torch_trace_rank_1.log"
    hit = next(p for r, p in _records(log) if (r.get("artifact") or {}).get("name") == "fx_graph_cache_hit")
    saved = int(json.loads(hit)["time_saved_ns"]) / 1e9
    app = make_app(data, tmp_path)
    async with app.run_test(size=(200, 50)) as pilot:
        table, cols = await _metrics_table(app, pilot)
        row = next(
            r
            for r in table._rows_plain()
            if (r[cols.index("rank")], r[cols.index("compile id")]) == ("1", "0/0")
        )
        assert row[cols.index("cache")] == "hit"
        table.focus()
        for _ in range(table._rows_plain().index(row)):  # the cursor starts on the first row
            await press(pilot, "j")
        detail = app.query_one("#metrics-detail", Info).plain
        assert (
            "cache: fx_graph hit, aotautograd hit" in detail and f"fx_graph hit saved {saved:.3f} s" in detail
        )


# -- run-time findings across ranks (the Ranks view, 8), on tlparse's inputs -------------------------

TLPARSE = Path(__file__).resolve().parents[1] / "data" / "tlparse"


async def test_ranks_view_names_the_collective_hang_first(tmp_path):
    """multi_rank_schedule: rank 1 issues other collectives than ranks 0 and 2 (tlparse's input)."""
    app = make_app(TLPARSE / "multi_rank_schedule", tmp_path)
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_loaded(app, pilot)
        await press(pilot, "8")
        rows = app.query_one("#ranks-table", VimTable)._rows_plain()
        assert rows[0][2] == "Collectives" and "HANG RISK: rank 1 issues wait_tensor" in rows[0][3]
        assert any(r[2] == "Collectives parity" for r in rows)
        detail = app.query_one("#ranks-detail", Info).plain
        assert "where ranks 0, 2 issue reduce_scatter_tensor" in detail


async def test_ranks_view_shows_parity_of_a_single_rank(tmp_path):
    app = make_app(TLPARSE / "collectives_parity", tmp_path)
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_loaded(app, pilot)
        await press(pilot, "8")
        rows = app.query_one("#ranks-table", VimTable)._rows_plain()
        (parity,) = [r for r in rows if r[2] == "Collectives parity"]
        assert "never waited on" in parity[3]


@pytest.mark.parametrize(
    "path",
    [
        TLPARSE / "inductor_provenance_aot_log.txt",  # no compile id (AOTInductor)
        TLPARSE / "cache_hit_miss.log",  # ids logged again after torch._dynamo.reset()
        TLPARSE.parent / "traces" / "2.13.0" / "scenarios" / "compiled_autograd",  # !0/1/0
    ],
    ids=["aoti", "reset", "compiled-autograd"],
)
async def test_every_view_draws_compiles_of_every_id_shape(path, tmp_path):
    from fxlens.tui.widgets import CompileTree

    app = make_app(path, tmp_path)
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_loaded(app, pilot)
        for key in "1234567890c":
            await press(pilot, key)
        assert app.is_running
        labels = [str(n.label) for n in app.query_one("#tree", CompileTree).root.children]
        assert labels
        if path.name == "cache_hit_miss.log":  # six compiles in six frames, fn2 last
            await press(pilot, "c")
            rows = app.query_one("#output-table", VimTable)._rows_plain()
            assert [r[0] for r in rows][-1].startswith("1/0#3")


async def test_metrics_view_heads_with_cold_start_and_repeated_blocks(blocks_trace, tmp_path):
    """The report's compile-time headlines are rows of the Metrics view: where cold start went and each
    repeated block regional compilation would compile once (issue 30's findings, in the TUI)."""
    trace, _ = blocks_trace
    from fxlens.report.build import build_report
    from fxlens.trace.session import Session

    report = build_report(Session.open(trace), with_guards=False)
    (block,) = report["repeated_blocks"]
    cold = report["compile_times"]["cold_start"]["message"]
    app = make_app(trace, tmp_path)
    async with app.run_test(size=(220, 50)) as pilot:
        table, cols = await _metrics_table(app, pilot)
        rows = table._rows_plain()
        # the compiles first (the view opens on one), then the headlines
        assert rows[0][cols.index("compile id")] == "0/0"
        (head,) = [r for r in rows if r[cols.index("compile id")] == "cold start"]
        assert head[cols.index("function")] == cold
        i = next(i for i, r in enumerate(rows) if r[cols.index("compile id")] == "repeated")
        assert rows[i][cols.index("function")] == block["message"]
        table.focus()
        for _ in range(i):
            await press(pilot, "j")
        detail = app.query_one("#metrics-detail", Info).plain
        assert block["message"] in detail and f"fix: {block['fix']}" in detail
        assert "Repeated block (regional compilation):" in detail
