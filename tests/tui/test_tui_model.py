"""The TUI's pure-Python parts on real logs: graph code parsing, guard matching and diffs, loading."""

from __future__ import annotations

import pytest
from tui_helpers import make_app, press, wait_loaded

from fxlens.trace.graph_code import filter_nodes, parse_graph, sort_nodes
from fxlens.trace.session import Session
from fxlens.tui.guardmatch import failed_guards, guard_diff, locate
from fxlens.tui.loader import index_rank, load_ranks, summarise
from fxlens.tui.widgets import Info

pytestmark = pytest.mark.tui


def test_parse_dynamo_and_aten_graphs(traces):
    s = Session.open(traces.session)
    dynamo = parse_graph(s.artifact("0/0", "dynamo_output_graph"))
    ops = {n.name: n for n in dynamo}
    assert [n.op for n in dynamo][0] == "placeholder" and dynamo[-1].op == "output"
    assert ops["relu"].target == "torch.relu" and ops["y"].target == "operator.mul"
    assert ops["relu"].shape == "[4, 8]" and ops["relu"].stride == "[8, 1]" and ops["relu"].device == "cpu"
    assert ops["relu"].source == "model.py:56" and "torch.relu(x)" in ops["relu"].code
    aten = parse_graph(s.artifact("0/0", "artifact:fxlens_aten_forward_graph"))
    assert [n.target for n in aten if n.op == "call_function"] == [
        "torch.ops.aten.relu.default",
        "torch.ops.aten.mul.Tensor",
    ]
    # the kernel's "nodes" name nodes of this graph (what `o` relies on)
    names = {n.name for n in aten}
    assert all(
        set(k["nodes"]) <= names
        for k in [r.payload_json() for r in s.records("0/0") if r.kind == "artifact:fxlens_kernel"]
    )
    assert [n.name for n in filter_nodes(dynamo, "op:placeholder")] == ["L_x_"]
    assert sort_nodes(dynamo, "name")[0].name == sorted(n.name for n in dynamo)[0]


def test_failed_guard_located_and_diff(traces):
    s = Session.open(traces.session)
    guards = s.guards("0/0")
    (fg,) = failed_guards("0/0", s.recompiles, guards)
    assert fg.recompile == "0/1" and "size mismatch" in fg.reason
    assert "TENSOR_MATCH" in guards[fg.line_index] and "size=[4, 8]" in guards[fg.line_index]
    assert locate("scale == 3.0", ["| +- EQUALS_MATCH: L['scale'] == 3.0  # x"]) == 0
    diff = guard_diff(guards, s.guards("0/1"))
    changed = [g for t, g in diff if t != " "]
    assert len(changed) == 2 and all("check_tensor(x," in g for g in changed)


def test_loading_indexes_outcomes_and_divergence(traces):
    s = Session.open(traces.multi)
    ranks = list(load_ranks(s))
    assert [r.model.rank for r in ranks] == [0, 1]
    assert [r.label for r in ranks] == ["rank 0", "rank 1"]
    (frame0, frame1) = ranks[0].frames
    assert frame0.function == "f" and frame0.outcome == "break"
    assert "resume @57" in frame1.label
    # the Session is filled in: its lookups do not read the logs again
    assert s.__dict__["ranks"] and s.guards("0/0", 1)
    summary = summarise(s)
    assert summary.divergence and summary.breaks[0]["line"] == 57
    assert index_rank(s.ranks[1]).frames[0].compiles[-1].tags == ("break", "recompile")


async def test_session_without_logs_says_so(traces, tmp_path):
    empty = tmp_path / "empty-session"
    empty.mkdir()
    (empty / "session.json").write_text("{}")
    app = make_app(empty, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(app, pilot)
        notice = app.query_one("#notice", Info)
        assert notice.has_class("shown") and "no TORCH_TRACE logs" in notice.plain
        for key in "12345678":
            await press(pilot, key)
        assert app.is_running


async def test_odd_records_never_crash_the_app(traces, tmp_path):
    """Events and kernel payloads shaped unlike what the views expect: shown as far as they make
    sense, no crash and no error toast (the autouse `no_error_toasts` fixture checks)."""
    import shutil

    from fxlens.trace.session import append_event

    odd = tmp_path / "odd"
    shutil.copytree(traces.session, odd)
    append_event(odd, "bisect", {"stages": "not a list", "culprit": "not a dict", "summary": 3})
    log = next((odd / "trace").glob("*.log"))
    text = log.read_text()
    marker = '{"artifact": {"name": "fxlens_kernel", "encoding": "json"}'
    i = text.index(marker)
    j = text.index("\n", i)
    # the first kernel's payload line becomes something that is not JSON
    k = text.index("\n", j + 1)
    log.write_text(text[: j + 1] + "\t[[[ not json\n" + text[k + 1 :])
    app = make_app(odd, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(app, pilot)
        await press(pilot, "6", "v", "j", "j", "o")  # the odd bisect event, and its "culprit"
        await press(pilot, "5", "v", "j", "k", "o")  # kernels, one payload unreadable
        await press(pilot, "t", "g", "j", "l", "j", "enter", "a", "a", "v", "o")
        assert app.is_running
        assert app.current_view in ("graph", "kernels")


def test_a_log_that_cannot_be_read_is_skipped_not_fatal(traces, tmp_path):
    """A rank log whose only record has a bad shape (a stack that is not a list): that record is
    skipped and noted, the rank is still listed (empty), the other ranks are whole."""
    import shutil

    trace = tmp_path / "trace"
    shutil.copytree(traces.multi, trace)
    bad = trace / "dedicated_log_torch_trace_rank_2_c.log"
    bad.write_bytes(
        b'V1202 10:37:53.447000 9632 x.py:1] {"dynamo_start": {"stack": 5}, "frame_id": 0, "frame_compile_id": 0}\n'
    )
    s = Session.open(trace)
    entries = list(load_ranks(s))
    assert [e.model.rank for e in entries] == [0, 1, 2] and not entries[2].model.graphs
    assert any("rank_2" in note and "stack is not a list" in note for note in s.skipped)
